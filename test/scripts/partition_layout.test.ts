import t from "tap";
import { hostedPartitions, topicLayout } from "../../scripts/lib/partition_layout.ts";

// Topics hold the asked count exactly: full ones, then a smaller last one when it does not divide.
t.test("topicLayout fills topics of the given size and ends with the remainder", (t) => {
  t.same(topicLayout(128, 64), [{ name: "t0000", partitions: 64 }, { name: "t0001", partitions: 64 }]);
  const tenThousand = topicLayout(10_000, 1024);
  t.equal(tenThousand.length, 10);
  t.same(tenThousand.map((topic) => topic.partitions), [...Array(9).fill(1024), 784]);
  t.same(topicLayout(1, 1024), [{ name: "t0000", partitions: 1 }]);
  t.same(topicLayout(100, 64).map((topic) => topic.partitions), [64, 36]);
  t.end();
});

// A count or a topic size the API cannot take is refused, not laid out as something else.
t.test("topicLayout refuses counts that are not positive and topics above 1,024 partitions", (t) => {
  t.throws(() => topicLayout(0, 64), /Cannot lay out topics: 0 partitions/);
  t.throws(() => topicLayout(1.5, 64), /Cannot lay out topics/);
  t.throws(() => topicLayout(10, 1025), /1025 partitions per topic is not 1 to 1024/);
  t.end();
});

// The server's own list of a stream's topics is what the benchmark counts as hosted.
t.test("hostedPartitions reads each topic's partitions from a stream of GET /streams", (t) => {
  const stream = {
    name: "bench",
    topics: [{ id: 1, name: "t0000", partitions: 64 }, { name: "x", partitions: 3 }],
  };
  t.same([...hostedPartitions(stream)], [["t0000", 64], ["x", 3]]);
  t.throws(() => hostedPartitions(undefined), /the stream has no topics array/);
  t.throws(() => hostedPartitions({ topics: [{ name: "a" }] }), /a topic without name or partitions/);
  t.end();
});
