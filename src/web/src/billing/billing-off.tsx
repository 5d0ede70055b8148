/** What a billing page says in place of itself when the hub does not run the billing plugin. */
export function BillingOff({ heading, text }: { heading: string; text: string }) {
  return (
    <section class="panel notice">
      <h1>{heading}</h1>
      <p>{text}</p>
    </section>
  );
}
