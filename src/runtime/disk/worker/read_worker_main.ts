import * as fs from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { assert } from "../../assert.ts";
import type { CloseRequest, FileWorkerData, Numbered } from "./file_worker_protocol.ts";
import { ReadHandler, type ReadRequest } from "./read_worker_handler.ts";

/**
 * The read worker's thread (started by `ReadWorker`, `file_workers.ts`): each request the loop posts
 * is answered by `ReadHandler` over `node:fs`, one answer per request, in order.
 */
assert(parentPort !== null, "the read worker runs on a worker thread");
const port = parentPort;
const handler = new ReadHandler(fs, workerData as FileWorkerData);
port.on(
  "message",
  (request: Numbered<ReadRequest | CloseRequest>) => port.postMessage(handler.answer(request)),
);
