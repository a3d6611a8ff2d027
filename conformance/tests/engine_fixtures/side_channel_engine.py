"""Two toy engines with a shared side channel, as Mooncake's (a lease heartbeat tried first, then a pull), for the shared-socket property's meta-test.

``ENGINE``: the pull's transfer ids are called ``transfer_ids``, so a pull
read as a heartbeat has none (the receiver then reads it as a pull).
``CLASHING_ENGINE``: a release renamed them ``lease_transfer_ids``, the
heartbeat's name, so a pull with ids is read as a heartbeat: the property
must fail there.
"""

from __future__ import annotations

from typing import List

import msgspec
from gateway_engine import MsgspecCodec

from conformance.engines import Engine, MessageFamily
from reference_codec import PickleCodec
from strategies import from_struct


class LeaseHeartbeat(msgspec.Struct, omit_defaults=True):
    lease_transfer_ids: List[str] = []


class Pull(msgspec.Struct, omit_defaults=True):
    remote_host: str
    transfer_ids: List[str]
    remote_port: int = 0


class ClashingPull(msgspec.Struct, omit_defaults=True):
    remote_host: str
    lease_transfer_ids: List[str]
    remote_port: int = 0


def _engine(name: str, pull: type) -> Engine:
    types = {"LeaseHeartbeat": LeaseHeartbeat, pull.__name__: pull}
    return Engine(
        name=name,
        description="a toy KV connector's side channel",
        message_types=lambda: types,
        message_strategy=lambda cls: from_struct(cls),
        codecs={"msgspec": MsgspecCodec, "pickle": PickleCodec},
        pickle_baseline=PickleCodec,
        typed_frames=True,
        wire_reference=lambda out_of_band: MsgspecCodec(),
        families=(
            MessageFamily(
                name="side-channel", description="heartbeats and pulls on one socket", roots=lambda: types, framing="typed",
                channels={"side channel": ("LeaseHeartbeat", pull.__name__)},
            ),
        ),
    )


ENGINE = _engine("side-channel", Pull)
CLASHING_ENGINE = _engine("side-channel-clashing", ClashingPull)
