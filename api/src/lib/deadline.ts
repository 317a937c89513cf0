/**
 * `work`, or a rejection "timed out after <ms> ms" once `ms` have passed (a read of another
 * server that must not hold an answer up). The late outcome of `work` is dropped, never unhandled.
 */
export function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    timer.unref();
  });
  work.catch(() => {});
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
