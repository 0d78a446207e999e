import t from "tap";
import { ConfigError } from "../../src/config/config_error.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { openServer } from "../helpers/open_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";

// The chunk cache's budget is the smaller of `size` and `size_percent` of the data disk's capacity,
// divided among shards; a budget under 2 × chunk_size × fetch_concurrency × shards stops start-up.

/** A real disk that reports the capacity it is given. */
class SizedDisk extends NodeDisk {
  constructor(readonly reportedCapacityBytes: number) {
    super();
  }
  override capacityBytes(_path: string): Promise<number> {
    return Promise.resolve(this.reportedCapacityBytes);
  }
}

const GiB = 1024 ** 3;

async function budgetOf(
  t: Parameters<typeof openServer>[0],
  capacityBytes: number,
  env: Record<string, string>,
) {
  const { server } = await openServer(t, env, tempDir(t), new SizedDisk(capacityBytes));
  const text = await (await server.handler(new Request("http://strata.test/metrics"))).text();
  return Number(/^strata_cache_budget_bytes (\d+)$/m.exec(text)?.[1]);
}

t.test("the budget is size_percent of the disk when that is smaller than size, and size otherwise", async (t) => {
  t.equal(await budgetOf(t, 10 * GiB, {}), 2 * GiB, "20 % of 10 GiB under the 4 GiB size");
  t.equal(await budgetOf(t, 100 * GiB, {}), 4 * GiB, "size under 20 % of 100 GiB");
  t.equal(
    await budgetOf(t, 10 * GiB, {
      STRATA_TIERED_STORAGE_CACHE_SIZE_PERCENT: "50",
      STRATA_SYSTEM_SHARDS: "2",
    }),
    4 * GiB,
    "summed over both shards: the same budget, divided",
  );
});

t.test("a disk too small for the fetches in flight stops start-up naming size_percent", async (t) => {
  // 1 % of 5 GiB = 51 MiB, under 2 × 8 MiB × 4 × 1 = 64 MiB.
  const error = await budgetOf(t, 5 * GiB, { STRATA_TIERED_STORAGE_CACHE_SIZE_PERCENT: "1" }).then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(error instanceof ConfigError, `a ConfigError (${error})`);
  t.equal((error as ConfigError).key, "[tiered_storage.cache] size_percent");
  t.match((error as ConfigError).message, /under 2 × chunk_size × fetch_concurrency × shards = 67108864/);
});
