"""bench:peers's load for a Kafka broker with librdkafka (Debian's python3-confluent-kafka).

  peer_load_kafka.py '<LoadArgs as JSON>'

The arguments and the JSON line printed are peer_load.ts's. Each producer is a librdkafka Producer
of its own in a thread of its own (librdkafka's I/O runs in its own threads), acks 1, writing to
partition producer % partitions, with at most `window` records sent and not acknowledged. Consuming
reads every partition by assignment from offset 0, without a group, and checks as peer_load.ts's
RecordCheck does: every acknowledged record read, none twice, each of the payload's length.
"""
import json
import os
import resource
import struct
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

# bench:kafka's load (scripts/lib/kafka_load.py) lies one folder up, beside the peers' folder.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from kafka_load import percentile  # noqa: E402

TOPIC = "bench"
# How long a producer waits for its last acknowledgements after sending stops.
FLUSH_DEADLINE_S = 60
# How long consuming back may take.
CONSUME_DEADLINE_S = 300


def cpu_ms():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return (usage.ru_utime + usage.ru_stime) * 1000


def producer_loop(args, index, deadline, latencies, acknowledged, failures):
    producer = Producer({
        "bootstrap.servers": args["address"],
        "acks": "1",
        "linger.ms": 2,
        "batch.size": 1048576,
        "enable.idempotence": False,
        "queue.buffering.max.messages": max(args["window"], 1),
    })
    partition = index % args["partitions"]
    template = bytearray(os.urandom(args["payloadBytes"]))
    struct.pack_into(">I", template, 0, index)
    outstanding = [0]
    mine = []

    def delivered(error, _message, sent_at):
        outstanding[0] -= 1
        if error is not None:
            failures.append(str(error))
        else:
            mine.append((time.perf_counter() - sent_at) * 1000)

    seq = 0
    while time.perf_counter() < deadline and not failures:
        if outstanding[0] >= args["window"]:
            producer.poll(0.001)
            continue
        struct.pack_into(">I", template, 4, seq)
        sent_at = time.perf_counter()
        producer.produce(TOPIC, bytes(template), partition=partition,
                         on_delivery=lambda e, m, s=sent_at: delivered(e, m, s))
        outstanding[0] += 1
        seq += 1
        producer.poll(0)
    unsent = producer.flush(FLUSH_DEADLINE_S)
    if unsent > 0:
        failures.append(f"{unsent} records unacknowledged {FLUSH_DEADLINE_S} s after sending stopped")
    latencies.extend(mine)
    acknowledged[index] = len(mine)


def produce(args):
    latencies = []
    acknowledged = [0] * args["producers"]
    failures = []
    start = time.perf_counter()
    deadline = start + args["seconds"]
    threads = [threading.Thread(target=producer_loop, args=(args, i, deadline, latencies, acknowledged, failures))
               for i in range(args["producers"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    if failures:
        sys.exit(f"Cannot produce: {failures[:3]}")
    records = sum(acknowledged)
    return {"records": records, "bytes": records * args["payloadBytes"], "seconds": seconds,
            "p50Ms": percentile(latencies, 0.50), "p99Ms": percentile(latencies, 0.99),
            "acknowledged": acknowledged, "cpuMs": cpu_ms()}


def consume(args):
    expected = args["acknowledged"]
    consumer = Consumer({
        "bootstrap.servers": args["address"],
        "group.id": "bench-peers-unused",
        "enable.auto.commit": False,
        "fetch.max.bytes": 52428800,
        "max.partition.fetch.bytes": 10485760,
    })
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(args["partitions"])])
    seen = [set() for _ in expected]
    problems = []
    records = 0
    size = 0
    start = time.perf_counter()
    deadline = start + CONSUME_DEADLINE_S
    total = sum(expected)
    while records < total and time.perf_counter() < deadline:
        for message in consumer.consume(10000, 1.0):
            if message.error() is not None:
                if message.error().code() != KafkaError._PARTITION_EOF:
                    problems.append(str(message.error()))
                continue
            value = message.value()
            records += 1
            size += len(value)
            if len(value) != args["payloadBytes"]:
                problems.append(f"a record of {len(value)} bytes")
                continue
            producer, seq = struct.unpack_from(">II", value, 0)
            if producer >= len(seen) or seq in seen[producer]:
                problems.append(f"producer {producer}: record {seq} unknown or twice")
                continue
            seen[producer].add(seq)
    seconds = time.perf_counter() - start
    consumer.close()
    short = [i for i, n in enumerate(expected) if any(seq not in seen[i] for seq in range(n))]
    if problems or short:
        sys.exit(f"Cannot consume: {problems[:3]} short: {short[:3]}")
    return {"records": records, "bytes": size, "seconds": seconds, "cpuMs": cpu_ms()}


if __name__ == "__main__":
    arguments = json.loads(sys.argv[1])
    result = produce(arguments) if arguments["mode"] == "produce" else consume(arguments)
    print(json.dumps(result))
