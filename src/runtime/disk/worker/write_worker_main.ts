import * as fs from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { assert } from "../../assert.ts";
import type { CloseRequest, FileWorkerData, Numbered } from "./file_worker_protocol.ts";
import { WriteHandler, type WriteRequest } from "./write_worker_handler.ts";

/**
 * The write worker's thread (started by `WriteWorker`, `file_workers.ts`): each request the loop
 * posts is answered by `WriteHandler` over `node:fs`, one answer per request, in order.
 */
assert(parentPort !== null, "the write worker runs on a worker thread");
const port = parentPort;
const handler = new WriteHandler(fs, workerData as FileWorkerData);
port.on(
  "message",
  (request: Numbered<WriteRequest | CloseRequest>) => port.postMessage(handler.answer(request)),
);
