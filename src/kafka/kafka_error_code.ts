/**
 * Kafka's error codes (its `Errors` table) that Strata answers with. A code travels in a response
 * where Kafka puts it (per partition, per topic, or for the whole response); its meaning, and what a
 * client does about it, is Kafka's.
 */
export const kafkaErrorCode = {
  unknownServerError: -1,
  none: 0,
  offsetOutOfRange: 1,
  corruptMessage: 2,
  unknownTopicOrPartition: 3,
  leaderNotAvailable: 5,
  notLeaderOrFollower: 6,
  requestTimedOut: 7,
  messageTooLarge: 10,
  coordinatorNotAvailable: 15,
  invalidTopicException: 17,
  recordListTooLarge: 18,
  notEnoughReplicas: 19,
  notEnoughReplicasAfterAppend: 20,
  invalidRequiredAcks: 21,
  clusterAuthorizationFailed: 31,
  invalidTimestamp: 32,
  unsupportedSaslMechanism: 33,
  illegalSaslState: 34,
  unsupportedVersion: 35,
  topicAlreadyExists: 36,
  invalidPartitions: 37,
  invalidReplicationFactor: 38,
  invalidConfig: 40,
  invalidRequest: 42,
  unsupportedForMessageFormat: 43,
  kafkaStorageError: 56,
  saslAuthenticationFailed: 58,
  fencedLeaderEpoch: 74,
  unknownLeaderEpoch: 75,
} as const;

export type KafkaErrorCode = (typeof kafkaErrorCode)[keyof typeof kafkaErrorCode];
