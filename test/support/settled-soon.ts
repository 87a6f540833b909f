/**
 * Whether `promise` settles while the event loop turns a bounded number of times (no wall time, no
 * timers). For negative checks only ("this answer is still held"): a positive wait belongs on an
 * event (await the promise itself, or a gate the code under test reaches).
 */
export async function settledSoon(promise: Promise<unknown>, turns = 20): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  for (let turn = 0; turn < turns && !done; turn++) await new Promise((resolve) => setImmediate(resolve));
  return done;
}
