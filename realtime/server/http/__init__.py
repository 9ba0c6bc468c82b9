"""The port's HTTP front: one parser (h11), one route table, one gate, and
the hand-over of an accepted WebSocket upgrade to websockets."""
