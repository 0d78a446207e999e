import { parseArgs } from "node:util";
import { walkPaths } from "./lib/path_walk.ts";

/**
 * The files of `src/` that two requests run through, measured by V8's precise coverage:
 *
 *   deno task paths [--json]
 *
 * - `produce`: one Kafka Produce (acks=-1, `fsync = "always"`), from the socket through the append
 *   and its fsync to the answer written back;
 * - `cold_fetch`: one Kafka Fetch of an evicted segment through an empty chunk cache, from the socket
 *   through the object store and the cache fill to the answer.
 *
 * A server runs in this process on a virtual clock (so no periodic duty runs while a request is
 * measured) over real disks and the `fs` object store. Each request is made once first, so that what
 * runs only the first time is not counted; then the coverage counters are reset, the same request is
 * made again, and every file with a function that ran counts, until the server is quiet again (what
 * the request set off in the background counts too). The client's bytes are encoded before
 * and decoded after the measured window, so no code of `src/` runs for the client inside it.
 * docs/ARCHITECTURE.md, "The path of a Kafka produce" and "The path of a cold fetch", list the files.
 */

const { values: args } = parseArgs({
  args: Deno.args,
  options: { json: { type: "boolean", default: false } },
});
const paths = await walkPaths();
if (args.json) {
  console.log(JSON.stringify(paths, null, 2));
} else {
  for (const [name, files] of Object.entries(paths)) {
    console.log(`${name}: ${files.length} files`);
    for (const file of files) console.log(`  ${file}`);
  }
}
Deno.exit(0);
