"""A librdkafka load for bench:kafka (Debian's python3-confluent-kafka).

  kafka_load.py produce BROKER TOPIC PARTITION RECORDS VALUE_BYTES [idempotent|transactional]
  kafka_load.py consume BROKER TOPIC PARTITION RECORDS [read_committed|read_uncommitted]

Prints one JSON line: records, bytes, seconds, and for produce the acknowledgement latency's p50
and p99 in milliseconds (from produce() to the delivery report). With "idempotent" the producer is
librdkafka's idempotent one (enable.idempotence, which takes acks=all); with "transactional" it is
a transactional one (transactional.id bench-txn-PARTITION) that commits a transaction every
COMMIT_INTERVAL_S and also reports "transactions"; otherwise acks=1. Consuming reads the partition by
assignment from offset 0, without a group, with the given isolation level (read_uncommitted by
default), and checks every record's length.
"""
import json
import os
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else 0.0


COMMIT_INTERVAL_S = 0.1


def produce(broker, topic, partition, records, value_bytes, kind="plain"):
    settings = {
        "bootstrap.servers": broker,
        "acks": "1" if kind == "plain" else "all",
        "linger.ms": 5,
        "batch.size": 1048576,
        "enable.idempotence": kind != "plain",
        "queue.buffering.max.messages": 100000,
        "queue.buffering.max.kbytes": 262144,
    }
    transactional = kind == "transactional"
    if transactional:
        settings["transactional.id"] = f"bench-txn-{partition}"
    producer = Producer(settings)
    value = os.urandom(value_bytes)
    latencies = []
    failures = []

    def delivered(error, _message, started=None):
        if error is not None:
            failures.append(str(error))
        else:
            latencies.append((time.perf_counter() - started) * 1000)

    # Set-up is not timed: the topic's metadata (without it the client's first records wait for
    # its next metadata refresh, up to a second) and a transactional producer's id.
    producer.list_topics(topic, 30)
    if transactional:
        producer.init_transactions(30)
    start = time.perf_counter()
    transactions = 0
    if transactional:
        producer.begin_transaction()
        began = time.perf_counter()
    for i in range(records):
        sent_at = time.perf_counter()
        if transactional and sent_at - began >= COMMIT_INTERVAL_S:
            producer.commit_transaction(60)
            transactions += 1
            producer.begin_transaction()
            began = time.perf_counter()
        while True:
            try:
                producer.produce(topic, value, partition=partition,
                                 on_delivery=lambda e, m, s=sent_at: delivered(e, m, s))
                break
            except BufferError:
                producer.poll(0.01)
        if i % 1000 == 0:
            producer.poll(0)
    if transactional:
        producer.commit_transaction(60)
        transactions += 1
    producer.flush(60)
    seconds = time.perf_counter() - start
    if failures or len(latencies) != records:
        sys.exit(f"Cannot produce: {len(latencies)} of {records} acknowledged; {failures[:3]}")
    result = {"records": records, "bytes": records * value_bytes, "seconds": seconds,
              "p50_ms": percentile(latencies, 0.50), "p99_ms": percentile(latencies, 0.99)}
    if transactional:
        result["transactions"] = transactions
    print(json.dumps(result))


def consume(broker, topic, partition, records, isolation="read_uncommitted"):
    consumer = Consumer({
        "bootstrap.servers": broker,
        "group.id": "bench-kafka-unused",
        "enable.auto.commit": False,
        "isolation.level": isolation,
        "fetch.max.bytes": 52428800,
        "max.partition.fetch.bytes": 10485760,
    })
    consumer.assign([TopicPartition(topic, partition, 0)])
    count = 0
    size = 0
    start = time.perf_counter()
    deadline = start + 120
    while count < records and time.perf_counter() < deadline:
        for message in consumer.consume(10000, 1.0):
            if message.error() is not None:
                continue
            count += 1
            size += len(message.value())
    seconds = time.perf_counter() - start
    consumer.close()
    if count < records:
        sys.exit(f"Cannot consume: {count} of {records} records within 120 s")
    print(json.dumps({"records": count, "bytes": size, "seconds": seconds}))


if __name__ == "__main__":
    mode, broker, topic, partition, records = sys.argv[1:6]
    if mode == "produce":
        produce(broker, topic, int(partition), int(records), int(sys.argv[6]),
                sys.argv[7] if len(sys.argv) > 7 else "plain")
    else:
        consume(broker, topic, int(partition), int(records),
                sys.argv[6] if len(sys.argv) > 6 else "read_uncommitted")
