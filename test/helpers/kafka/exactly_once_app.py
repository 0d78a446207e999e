"""A consume-transform-produce application with librdkafka's transactions, and its checks.

  exactly_once_app.py seed BROKER RECORDS     writes RECORDS input records 0 .. RECORDS-1 to "in"
  exactly_once_app.py run BROKER RECORDS      copies "in" to "out" (each value with "-out"), in
                                              transactions of up to 50 records that commit the input
                                              offsets with them; prints "progress N" after each commit
                                              and "done" once the committed offset reaches RECORDS
  exactly_once_app.py check BROKER RECORDS    reads "out" read_committed and the committed offset

The application reads with a manual assignment of "in"'s partition 0 from the group "eo"'s committed
offset, so that a restarted one starts where the last commit left it, and fences the one before it
by its transactional id. check prints one JSON line: the committed offset, how many output records
were read, whether they are 0 .. RECORDS-1 each once in order, and the first out of place.
"""
import json
import sys

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

GROUP = "eo"


def seed(broker, records):
    producer = Producer({"bootstrap.servers": broker, "enable.idempotence": True, "linger.ms": 5})
    for i in range(records):
        while True:
            try:
                producer.produce("in", str(i).encode(), partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(60) != 0:
        sys.exit("Cannot seed: records left unsent")


def run(broker, records):
    consumer = Consumer({"bootstrap.servers": broker, "group.id": GROUP, "enable.auto.commit": False,
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    start = consumer.committed([TopicPartition("in", 0)], timeout=30)[0].offset
    consumer.assign([TopicPartition("in", 0, max(start, 0))])
    producer = Producer({"bootstrap.servers": broker, "transactional.id": "eo-app", "linger.ms": 5,
                         "transaction.timeout.ms": 10000})
    producer.init_transactions(30)
    position = max(start, 0)
    while position < records:
        messages = [m for m in consumer.consume(50, 1) if m.error() is None]
        if not messages:
            continue
        producer.begin_transaction()
        for m in messages:
            producer.produce("out", m.value() + b"-out", partition=0)
        position = messages[-1].offset() + 1
        producer.send_offsets_to_transaction([TopicPartition("in", 0, position)],
                                             consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        print(f"progress {position}", flush=True)
    print("done", flush=True)


def check(broker, records):
    consumer = Consumer({"bootstrap.servers": broker, "group.id": "eo-check", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    committed = Consumer({"bootstrap.servers": broker, "group.id": GROUP}).committed(
        [TopicPartition("in", 0)], timeout=30)[0].offset
    consumer.assign([TopicPartition("out", 0, 0)])
    values = []
    empty_polls = 0
    while empty_polls < 5 and len(values) <= records:
        message = consumer.poll(1)
        if message is None:
            empty_polls += 1
            continue
        if message.error():
            continue
        values.append(int(message.value().decode().split("-")[0]))
    misplaced = [i for i, v in enumerate(values) if v != i][:5]
    print(json.dumps({"committed": committed, "read": len(values),
                      "exactly_once": values == list(range(records)), "misplaced": misplaced}))


if __name__ == "__main__":
    mode, broker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    try:
        {"seed": seed, "run": run, "check": check}[mode](broker, count)
    except KafkaException as error:
        sys.exit(f"Cannot {mode}: {error}")
