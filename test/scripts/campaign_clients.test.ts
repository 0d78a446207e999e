import t from "tap";
import kafkajs from "kafkajs";
import { parsePolledLines, sendOutcomeOfError } from "../../scripts/lib/campaign/campaign_clients.ts";

// kafkajs spreads its errors into its exports, which Node's named CommonJS imports cannot see.
const { KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError, KafkaJSRequestTimeoutError } = kafkajs;

const protocolError = (type: string, code: number) =>
  new KafkaJSProtocolError({ message: type, type, code, retriable: true } as never);

t.test("a send failed only when the leader refused it before writing; anything else is unknown", (t) => {
  t.equal(sendOutcomeOfError(protocolError("NOT_LEADER_FOR_PARTITION", 6)), "failed");
  t.equal(sendOutcomeOfError(protocolError("NOT_ENOUGH_REPLICAS", 19)), "failed");
  // Wrapped, as kafkajs throws it once its retries are spent.
  const wrapped = new KafkaJSNumberOfRetriesExceeded(protocolError("NOT_ENOUGH_REPLICAS", 19), {
    retryCount: 0,
    retryTime: 0,
  });
  t.equal(sendOutcomeOfError(wrapped), "failed");
  // Written, perhaps: the leader timed out waiting, stepped down while waiting, or the answer was lost.
  t.equal(sendOutcomeOfError(protocolError("NOT_ENOUGH_REPLICAS_AFTER_APPEND", 20)), "unknown");
  t.equal(sendOutcomeOfError(protocolError("REQUEST_TIMED_OUT", 7)), "unknown");
  t.equal(sendOutcomeOfError(protocolError("LEADER_NOT_AVAILABLE", 5)), "unknown");
  t.equal(sendOutcomeOfError(new KafkaJSRequestTimeoutError("Request timed out")), "unknown");
  t.equal(sendOutcomeOfError(new Error("Connection closed")), "unknown");
  t.equal(sendOutcomeOfError("not an error"), "unknown");
  t.end();
});

t.test("kcat's output: complete lines only, values with spaces kept whole", (t) => {
  t.same(parsePolledLines("0 a\n1 b c\n2 cut sho"), [{ offset: 0, value: "a" }, { offset: 1, value: "b c" }]);
  t.same(parsePolledLines(""), []);
  t.same(parsePolledLines("7 \n"), [{ offset: 7, value: "" }]);
  t.end();
});
