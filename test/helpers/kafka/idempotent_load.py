"""An idempotent librdkafka producer and a check that the partition holds its records exactly once.

  idempotent_load.py produce BROKER TOPIC RECORDS   (through BROKER, which may lose answers)
  idempotent_load.py check BROKER TOPIC RECORDS     (from offset 0 of partition 0)

produce prints one JSON line: records, delivered, errors (the first few). check prints: records
read, whether they are 0 .. RECORDS-1 each once in order, and the first offsets out of place.
"""
import json
import sys

from confluent_kafka import Consumer, Producer, TopicPartition


def produce(broker, topic, records):
    producer = Producer({
        "bootstrap.servers": broker,
        "enable.idempotence": True,
        "linger.ms": 2,
        "batch.num.messages": 50,
        "socket.timeout.ms": 10000,
        "message.timeout.ms": 60000,
        "reconnect.backoff.ms": 50,
        "retry.backoff.ms": 50,
    })
    delivered = []
    errors = []

    def report(error, _message):
        if error is None:
            delivered.append(1)
        else:
            errors.append(str(error))

    for i in range(records):
        while True:
            try:
                producer.produce(topic, str(i).encode(), partition=0, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    left = producer.flush(90)
    print(json.dumps({"records": records, "delivered": len(delivered), "errors": errors[:3], "left": left}))


def check(broker, topic, records):
    consumer = Consumer({"bootstrap.servers": broker, "group.id": "idempotent-check",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values = []
    empty_polls = 0
    while empty_polls < 5 and len(values) <= records:
        message = consumer.poll(1)
        if message is None:
            empty_polls += 1
            continue
        if message.error():
            continue
        values.append(int(message.value()))
    consumer.close()
    misplaced = [i for i, v in enumerate(values) if v != i][:5]
    print(json.dumps({"read": len(values), "exactly_once": values == list(range(records)),
                      "misplaced": misplaced}))


if __name__ == "__main__":
    mode, broker, topic, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    produce(broker, topic, count) if mode == "produce" else check(broker, topic, count)
