"""Share groups (KIP-932): share partitions, sessions, the share coordinator's state."""
