import type { InternalLog } from "../../broker/internal_topic.ts";
import type { TxnLogRecord } from "./txn_records.ts";

/** The name Kafka gives the internal topic of transactional ids' states. */
export const txnStateTopicName = "__transaction_state";

/** The transaction coordinator's view of `__transaction_state` (`InternalLog`). */
export type TxnLog = InternalLog<TxnLogRecord>;
