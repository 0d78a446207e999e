import t from "tap";
import { kafkaErrorCode } from "../../src/kafka/kafka_errors.ts";
import { txnErrorCode } from "../../src/kafka/txn/txn_error_codes.ts";
import { apiKey } from "../../src/kafka/wire/frame_codec.ts";

// The coordinator's answers as Kafka's codes, and PRODUCER_FENCED as an older client understands it.

t.test("each answer has Kafka's code; PRODUCER_FENCED goes to older versions as INVALID_PRODUCER_EPOCH", (t) => {
  t.equal(txnErrorCode("concurrent_transactions", apiKey.endTxn, 3), 51);
  t.equal(txnErrorCode("invalid_txn_state", apiKey.endTxn, 0), 48);
  t.equal(txnErrorCode("invalid_producer_id_mapping", apiKey.addPartitionsToTxn, 1), 49);
  t.equal(txnErrorCode("invalid_transaction_timeout", apiKey.initProducerId, 4), 50);
  t.equal(
    txnErrorCode("too_many_transactions", apiKey.addPartitionsToTxn, 3),
    kafkaErrorCode.policyViolation,
  );
  const fenced: [number, number, number][] = [
    [apiKey.initProducerId, 3, 47],
    [apiKey.initProducerId, 4, 90],
    [apiKey.addPartitionsToTxn, 1, 47],
    [apiKey.addPartitionsToTxn, 2, 90],
    [apiKey.addOffsetsToTxn, 1, 47],
    [apiKey.addOffsetsToTxn, 3, 90],
    [apiKey.endTxn, 0, 47],
    [apiKey.endTxn, 2, 90],
  ];
  for (const [api, version, code] of fenced) {
    t.equal(txnErrorCode("producer_fenced", api, version), code, `api ${api} v${version}`);
  }
  t.end();
});
