/** A promise settled from outside (what `Promise.withResolvers` gives from Node 22). */
export interface Deferred {
  promise: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * A promise for whoever holds it to settle later. Its rejection is observed here, so one nobody
 * awaits is never an unhandled rejection; awaiting it still throws.
 */
export function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
}
