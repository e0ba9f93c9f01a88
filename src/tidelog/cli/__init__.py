"""Client-side commands of the `tidelog` program (topics, groups, acls, users, produce, consume,
dump-log, export) and the small blocking Kafka client they use; `serve` starts the broker."""
