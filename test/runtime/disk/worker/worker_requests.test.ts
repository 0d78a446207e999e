import t from "tap";
import { WorkerError, WorkerRequests } from "../../../../src/runtime/disk/worker/worker_requests.ts";

/** A worker that doubles `n`, fails with a code on a negative one, and exits on "exit". */
const echoWorker = new URL("../../../helpers/echo_worker.ts", import.meta.url);

interface Doubled {
  seq: number;
  doubled: number;
  error: { code: string | undefined; message: string } | null;
}

t.test("answers are matched to their requests, errors keep their code and the answer", async (t) => {
  // Proves the matching by number with several requests in flight, and the error's shape.
  const requests = new WorkerRequests<Doubled>({
    name: "test worker",
    entry: echoWorker,
    requestsMax: 3,
    onReset: () => {},
  });
  const answers = await Promise.all([1, 2, 3].map((n) => requests.send({ n })));
  t.same(answers.map((a) => a.doubled), [2, 4, 6]);
  t.equal(requests.inFlight, 0);
  const error = await requests.send({ n: -1 }).catch((e) => e);
  t.ok(error instanceof WorkerError);
  t.equal(error.code, "ENEG");
  t.equal(error.message, "negative");
  t.equal(error.answer.doubled, 0, "the whole answer comes with the error");
});

t.test("start brings the worker up before any request; requests then go to it", async (t) => {
  // Proves a server can pay a worker's start at boot rather than in its first large read or write.
  const requests = new WorkerRequests<Doubled>({
    name: "test worker",
    entry: echoWorker,
    requestsMax: 2,
    onReset: () => {},
  });
  t.equal(requests.running, false, "not started by its construction");
  requests.start();
  t.equal(requests.running, true, "started");
  requests.start();
  t.same((await requests.send({ n: 21 })).doubled, 42, "and answering");
  t.equal(requests.running, true);
});

t.test("a worker that dies fails what it owed, resets its owner, and the next request starts a new one", async (t) => {
  // Proves nothing waits forever on a dead worker, and that the owner forgets what it held there.
  let resets = 0;
  const requests = new WorkerRequests<Doubled>({
    name: "test worker",
    entry: echoWorker,
    requestsMax: 2,
    onReset: () => resets++,
  });
  await t.rejects(requests.send({ op: "exit" }), /the test worker exited with code 3/);
  t.equal(resets, 1);
  t.equal(requests.inFlight, 0);
  t.equal((await requests.send({ n: 21 })).doubled, 42, "a new worker answers");
});

t.test("more requests in flight than requestsMax fail an assertion", async (t) => {
  // Proves the bound is checked, not assumed: callers must hold a turn per request.
  const requests = new WorkerRequests<Doubled>({
    name: "test worker",
    entry: echoWorker,
    requestsMax: 1,
    onReset: () => {},
  });
  const first = requests.send({ n: 1 });
  t.throws(() => requests.send({ n: 2 }), /test worker requests in flight exceed its turns/);
  t.equal((await first).doubled, 2);
  t.throws(
    () => new WorkerRequests({ name: "x", entry: echoWorker, requestsMax: 0, onReset: () => {} }),
    /requestsMax/,
  );
});
