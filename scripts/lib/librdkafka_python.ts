/**
 * The Python that runs the librdkafka loads (`kafka_load.py`, `peer_load_kafka.py`): Debian's, where
 * `apt-get install python3-confluent-kafka` puts the binding.
 */
export const librdkafkaPython = "/usr/bin/python3";

/** Why the librdkafka loads cannot run here (the binding or the interpreter missing), or null. */
export async function librdkafkaUnavailable(): Promise<string | null> {
  try {
    const probe = await new Deno.Command(librdkafkaPython, {
      args: ["-c", "import confluent_kafka"],
      stderr: "null",
    }).output();
    return probe.success
      ? null
      : "python3-confluent-kafka is not installed (Debian: apt-get install -y python3-confluent-kafka)";
  } catch {
    return `${librdkafkaPython} is not there`;
  }
}
