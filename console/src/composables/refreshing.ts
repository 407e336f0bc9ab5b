/** Wraps a mutation: it resolves to the mutation's result, and reads the data again after a change that succeeded. */
export function refreshing<A extends unknown[], R extends { error?: unknown }>(
  run: (...args: A) => Promise<R>,
  refresh: () => unknown,
) {
  return async (...args: A) => {
    const r = await run(...args);
    if (!r.error) void refresh();
    return r;
  };
}
