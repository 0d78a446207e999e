import t from "tap";
import { RemoteReadUnavailableError } from "../../../src/log/log_errors.ts";
import { RemoteWalk } from "../../../src/log/remote/remote_walk.ts";
import { offsetForTimestamp } from "../../../src/log/read/timestamp_lookup.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { appendOne, filledChain } from "../../helpers/chain_fixture.ts";

t.test("the first message at or after a timestamp, across segments; past every message, the next offset", async (t) => {
  const clock = new VirtualClock();
  const { chain } = await filledChain(t, 0, new NodeDisk(), clock);
  const stamps: number[] = [];
  for (let i = 0; i < 12; i++) {
    clock.advance(10);
    await appendOne(chain, i);
    stamps.push(clock.wallMs() * 1000);
  }
  t.ok(chain.segments.length > 2);
  const context = { disk: new NodeDisk(), label: "t", remote: new RemoteWalk("t") };
  for (const i of [0, 3, 4, 11]) {
    t.equal(await offsetForTimestamp(context, chain.segments, stamps[i]!), i, `at message ${i}'s stamp`);
    t.equal(await offsetForTimestamp(context, chain.segments, stamps[i]! - 1), i, `just before it`);
  }
  t.equal(await offsetForTimestamp(context, chain.segments, stamps[11]! + 1), 12);
  chain.segments[0]!.location = "remote";
  await t.rejects(
    offsetForTimestamp(context, chain.segments, stamps[0]!),
    RemoteReadUnavailableError,
    "a remote segment is searched through the remote reader, which is absent here",
  );
});
