import t from "tap";
import { readChainEpochs } from "../../../src/tier/restore/chain_epochs.ts";
import type { TieredObject } from "../../../src/tier/restore/transfer_chain.ts";

// Where a chain's leader epochs begin, read by bisection from its segments' first batch headers:
// a cluster's rising epochs, a single node's segments of no epoch (its producers' own values, -1 or
// 0 in any order) passed over, and a genuine fall refused.

/** A chain of one-offset segments whose first batches carry these epochs. */
function chainOf(epochs: number[]) {
  const objects = epochs.map((_, i) =>
    ({ key: `s${i}`, startOffset: i * 10, endOffset: i * 10 + 9 }) as TieredObject
  );
  const store = {
    getRange(key: string, start: number, end: number) {
      const header = new Uint8Array(end - start);
      const view = new DataView(header.buffer);
      view.setInt32(12, epochs[Number(key.slice(1))]!);
      header[16] = 2;
      return Promise.resolve([header]);
    },
  };
  return { store, objects };
}

t.test("rising epochs start where they change", async (t) => {
  const { store, objects } = chainOf([1, 1, 2, 2, 2, 5]);
  t.same(await readChainEpochs(store, objects), [
    { epoch: 1, startOffset: 0 },
    { epoch: 2, startOffset: 20 },
    { epoch: 5, startOffset: 50 },
  ]);
});

t.test("a single node's segments of no epoch among a client's 0 start nothing and are not refused", async (t) => {
  const { store, objects } = chainOf([0, -1, -1, 0, -1, 0]);
  t.same(await readChainEpochs(store, objects), [{ epoch: 0, startOffset: 0 }]);
  const none = chainOf([-1, -1, 0, 0, 3]);
  t.same(await readChainEpochs(none.store, none.objects), [
    { epoch: 0, startOffset: 20 },
    { epoch: 3, startOffset: 40 },
  ]);
});

t.test("an epoch below the one before it is refused", async (t) => {
  const { store, objects } = chainOf([2, 3, 1]);
  await t.rejects(readChainEpochs(store, objects), /segment 20 is of leader epoch 1, below 2 before it/);
});
