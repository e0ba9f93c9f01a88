"""A Confluent-compatible schema registry built into the broker (issue 31).

Modules, bottom up: `tidelog.log.schema_records` (the `_schemas` topic's record format) and
`tidelog.log.schema_state` (the state those records make; in `log` so that the Spark export can
read `_schemas` from the log dirs too), `store` (the topic, read and written through the
broker's partitions), `avro`, `json_schema`, `protobuf` (parsing and compatibility of each
schema type), `schemas` (the types and compatibility levels behind one interface), `service`
(the REST API's operations), `acl_admin` (`/security/acls`: the ACLs on subjects), `access`
(what each route needs of its caller), `api` (its routes), `http` (the HTTP/1.1 listener),
`auth` (basic authentication against SCRAM users), `forward` (cluster mode: to the primary).

The package sits at the coordinators' layer: it uses `core` (topic admin, partitions,
credentials, ACL bindings) and `log` (record batches), names the broker's authorizer and ACL
changes by protocols (`access.Authorizer`, `acl_admin.AclChanges`), and the composition root
(`server/broker.py`) builds it when `schema.registry.listeners` is set.
"""
