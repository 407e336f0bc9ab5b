/**
 * One run of `task` at a time, for loops that catch up with a source (the policy feed, the pooled keys' states,
 * their disable reports): a call while a run is going makes it run once more when done, however many calls came
 * meanwhile (what the caller was told of may have come after the run read the source), and gets that run's
 * promise. `more` is asked before each repeat (e.g. whether the connection is still up). `task` reports its own
 * failures; one it throws ends the runs and rejects their promise.
 */
export function singleFlight(task: () => Promise<void>, more: () => boolean = () => true): () => Promise<void> {
  let running: Promise<void> | null = null;
  let again = false;
  return () => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await task();
      } while (again && more());
    })().finally(() => {
      running = null;
    });
    return running;
  };
}
