"""The cohort.v1 API, generated from proto/cohort/v1/pubsub.proto at build time.

pubsub_pb2 holds the messages and pubsub_pb2_grpc the PubSub stub and
servicer (with .pyi stubs by mypy-protobuf). They are written by the
package's build (setup.py), never committed.
"""
