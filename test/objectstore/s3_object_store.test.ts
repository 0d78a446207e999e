import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createTcpServer, type Socket } from "node:net";
import { inspect } from "node:util";
import t, { type Test } from "tap";
import { MalformedError, TransportError } from "../../src/objectstore/object_store_errors.ts";
import { ourStore } from "../helpers/harnesses/s3_harness.ts";

// The S3 backend's wrapped errors, against local servers that fail on purpose: each keeps the error
// it was made from as its `cause`, and neither the message nor the cause holds a credential.
const credentials = {
  accessKeyId: "AKIDCAUSETEST0000001",
  secretAccessKey: "cause-test-secret-0000000000000000000000",
};

/** Listens on a free local port until the test ends; its address as an endpoint. */
async function listening(t: Test, server: Server | ReturnType<typeof createTcpServer>): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("Cannot listen: no port");
  return `http://127.0.0.1:${address.port}`;
}

/** Everything an error holds, its causes included, as a log or a debugger could show it. */
function everything(error: unknown): string {
  return inspect(error, { depth: 8, showHidden: true });
}

function checkNoCredentials(t: Test, error: unknown): void {
  const shown = everything(error);
  t.notMatch(shown, credentials.secretAccessKey, "no secret key in the error or its cause");
  t.notMatch(shown, credentials.accessKeyId, "no access key id either");
  t.notMatch(shown, /Signature=/, "nor a signature");
}

t.test("a refused connection is a TransportError whose cause is the transport's error", async (t) => {
  const server = createTcpServer();
  const endpoint = await listening(t, server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const store = ourStore({ endpoint, ...credentials }, "b");
  t.teardown(() => store.close());
  const error = await store.head("k").catch((e) => e);
  t.ok(error instanceof TransportError, `a TransportError (${error?.name})`);
  t.equal(error.message, "Cannot head k: ECONNREFUSED");
  t.equal(error.cause?.code, "ECONNREFUSED", "the connection's error is its cause, with its code");
  checkNoCredentials(t, error);
});

t.test("a request that times out is a TransportError whose cause is the abort", async (t) => {
  const held: Socket[] = [];
  const server = createTcpServer((socket) => held.push(socket));
  const endpoint = await listening(t, server);
  const store = ourStore({ endpoint, ...credentials }, "b", { requestTimeoutMs: 200 });
  const error = await store.head("k").catch((e) => e);
  held.forEach((socket) => socket.destroy());
  await store.close();
  t.ok(error instanceof TransportError, `a TransportError (${error?.name})`);
  t.equal(error.message, "Cannot head k: timed out after 200 ms");
  t.ok(error.cause instanceof Error, `the transport's error is its cause (${error.cause?.name})`);
  checkNoCredentials(t, error);
});

t.test("a body cut off part-way is a TransportError whose cause is the stream's error", async (t) => {
  const server = createHttpServer((_request, response) => {
    response.writeHead(206, { "content-length": "1000", "content-range": "bytes 0-999/1000" });
    response.write(new Uint8Array(10));
    setTimeout(() => response.socket?.destroy(), 20);
  });
  const endpoint = await listening(t, server);
  const store = ourStore({ endpoint, ...credentials }, "b");
  t.teardown(() => store.close());
  const error = await store.getRange("k", 0, 1000).catch((e) => e);
  t.ok(error instanceof TransportError, `a TransportError (${error?.name})`);
  t.match(error.message, /^Cannot get k: /);
  t.ok(error.cause instanceof Error, `the stream's error is its cause (${error.cause?.name})`);
  t.match(error.message, error.cause.code ?? error.cause.message, "the message names it");
  checkNoCredentials(t, error);
});

t.test("a list answer that is not a ListBucketResult is Malformed, with the parser's error as its cause", async (t) => {
  const server = createHttpServer((_request, response) => {
    response.writeHead(200, { "content-type": "application/xml" });
    response.end("<NotAList/>");
  });
  const endpoint = await listening(t, server);
  const store = ourStore({ endpoint, ...credentials }, "b");
  t.teardown(() => store.close());
  const error = await store.list("p/").catch((e) => e);
  t.ok(error instanceof MalformedError, `a MalformedError (${error?.name})`);
  t.equal(error.message, "Cannot list p/: the answer is not a ListBucketResult");
  t.match(error.cause?.message, /not a ListBucketResult/);
  checkNoCredentials(t, error);
});
