import process from "node:process";
import { parentPort } from "node:worker_threads";

/**
 * A worker program for the tests of `WorkerRequests`: it doubles `n`, fails with a code on a
 * negative one, and exits with code 3 on "exit".
 */
const port = parentPort;
if (port === null) throw new Error("Cannot run the echo worker: it runs on a worker thread");
port.on("message", (m: { seq: number; op?: string; n?: number }) => {
  if (m.op === "exit") process.exit(3);
  const n = m.n ?? 0;
  if (n < 0) port.postMessage({ seq: m.seq, doubled: 0, error: { code: "ENEG", message: "negative" } });
  else port.postMessage({ seq: m.seq, doubled: n * 2, error: null });
});
