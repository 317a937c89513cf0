/**
 * Holds the calls of an in-process service's method (the API runs in this process) until release():
 * a test forces an interleaving with it instead of hoping for one. After passNew(), calls made from
 * then on go through while those held stay held. A call is known by `keyOf` its first argument (the
 * argument itself by default): a retry of a held call, such as a purchase's fallback job, has its key.
 * Only calls `which` accepts (given the first argument, then all of them) are held and counted: the
 * platform's other work (an earlier purchase's fallback job, say) goes through and is never taken
 * for a call the test is waiting for.
 */
export function holdCalls<T extends object>(
  target: T,
  method: keyof T & string,
  options: { keyOf?: (first: unknown) => unknown; which?: (first: unknown, args: unknown[]) => boolean | Promise<boolean> } = {},
) {
  const keyOf = options.keyOf ?? ((first: unknown) => first);
  const which = options.which ?? (() => true);
  const own = Object.getOwnPropertyDescriptor(target, method);
  const original = target[method] as (...args: unknown[]) => Promise<unknown>;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let holding = true;
  let held = 0;
  const waiters: { count: number; resolve: () => void }[] = [];
  // A call for what is already held waits too, even after passNew(): a purchase's fallback charge
  // job (15 s after its start, sooner than the test on a loaded machine) must not pass it.
  const heldFirstArgs = new Set<unknown>();
  Object.defineProperty(target, method, {
    configurable: true,
    writable: true,
    value: async (...args: unknown[]) => {
      if (!(await which(args[0], args))) return original.apply(target, args);
      if (holding) {
        held++;
        heldFirstArgs.add(keyOf(args[0]));
        for (const w of waiters) if (heldFirstArgs.size >= w.count) w.resolve();
        await released;
      } else if (heldFirstArgs.has(keyOf(args[0]))) {
        await released;
      }
      return original.apply(target, args);
    },
  });
  return {
    held: () => held,
    /** Resolves once calls for `count` different first arguments are held (a retry of a held one, such as its fallback job, is not another). */
    reached: (count: number) => (heldFirstArgs.size >= count ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ count, resolve }))),
    passNew: () => void (holding = false),
    release: () => {
      holding = false;
      release();
    },
    restore: () => {
      release();
      if (own) Object.defineProperty(target, method, own);
      else delete (target as Record<string, unknown>)[method];
    },
  };
}
