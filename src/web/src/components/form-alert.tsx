/** A form's own error (not tied to one field), announced as it appears; nothing without one. */
export function FormAlert({ message }: { message: string | false | null | undefined }) {
  if (!message) return null;
  return (
    <p class="form-error" role="alert">
      {message}
    </p>
  );
}
