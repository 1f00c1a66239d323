"""Join the mp4 segments of one recording into one mp4, and count a file's readable frames.

With OpenCV 4.9 or later (``VIDEOWRITER_PROP_RAW_VIDEO``) the encoded frames are copied as
they are, a remux: fast and nothing lost. Each segment is read packet by packet
(``CAP_PROP_FORMAT=-1``) and every packet written, with its key-frame flag, to a writer
opened for raw video; the codec's header (the extradata) goes before the first packet, as
OpenCV's own remux test does for MPEG-4 (and the seek table keeps the segments' own key
frames, so a player seeks as in the segments). An older OpenCV decodes and encodes the frames
again (slower, and one more generation of compression).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from appliance.errors import OutputError

logger = logging.getLogger(__name__)

FOURCC = "mp4v"
NO_INTERVAL = 1 << 30


def can_remux() -> bool:
    """Whether this OpenCV copies encoded frames into a new file (4.9 or later)."""
    return all(
        hasattr(cv2, name)
        for name in (
            "VIDEOWRITER_PROP_RAW_VIDEO",
            "VIDEOWRITER_PROP_KEY_FLAG",
            "CAP_PROP_CODEC_EXTRADATA_INDEX",
            "CAP_PROP_LRF_HAS_KEY_FRAME",
        )
    )


def readable_frames(path: Path) -> int:
    """The frames ``path`` holds when it opens and its last frame decodes; 0 otherwise
    (a file cut short: the mp4 index is written last)."""
    cap = cv2.VideoCapture(str(path))
    try:
        if not cap.isOpened():
            return 0
        count = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        if count <= 0:
            return 0
        cap.set(cv2.CAP_PROP_POS_FRAMES, count - 1)
        return count if cap.read()[0] else 0
    finally:
        cap.release()


def join_videos(parts: Sequence[Path], target: Path, fps: float, remux: bool = True) -> int:
    """Write the frames of ``parts`` (mp4v files of one frame size) into ``target`` (a new
    file), in order; the number of frames written. ``remux=False`` (or an OpenCV without
    it) decodes and encodes again. Raises ``OutputError`` when a writer cannot be opened."""
    if not parts:
        raise ValueError("nothing to join")
    return _join(parts, target, fps, raw=remux and can_remux())


def _open_writer(target: Path, fps: float, size: tuple[int, int], raw: bool) -> cv2.VideoWriter:
    # raw: a packet is a key frame when its KEY_FLAG is set, or its index a multiple of
    # KEY_INTERVAL (every packet when none is given): no interval, the flags alone count
    params = [cv2.VIDEOWRITER_PROP_RAW_VIDEO, 1, cv2.VIDEOWRITER_PROP_KEY_INTERVAL, NO_INTERVAL]
    fourcc = cv2.VideoWriter.fourcc(*FOURCC)
    writer = cv2.VideoWriter(str(target), cv2.CAP_FFMPEG, fourcc, fps, size, params if raw else [])
    if not writer.isOpened():
        writer.release()
        raise OutputError(f"cannot write {target}: OpenCV could not open a video writer")
    return writer


def _join(parts: Sequence[Path], target: Path, fps: float, raw: bool) -> int:
    """Write every frame of ``parts`` into ``target``: packets as they are (``raw``: a
    remux) or decoded images encoded again."""
    writer: cv2.VideoWriter | None = None
    written = 0
    try:
        for part in parts:
            params = [cv2.CAP_PROP_FORMAT, -1] if raw else []
            cap = cv2.VideoCapture(str(part), cv2.CAP_FFMPEG, params)
            try:
                while True:
                    ok, frame = cap.read()
                    if not ok:
                        break
                    if writer is None:
                        writer = _open_writer(target, fps, _size(cap), raw)
                        if raw:  # the codec's header goes before the first packet
                            frame = np.concatenate([_extradata(cap), frame.reshape(-1)])[None, :]
                    if raw:
                        key = bool(cap.get(cv2.CAP_PROP_LRF_HAS_KEY_FRAME))
                        writer.set(cv2.VIDEOWRITER_PROP_KEY_FLAG, 1 if key else 0)
                    writer.write(frame)
                    written += 1
            finally:
                cap.release()
    finally:
        if writer is not None:
            writer.release()
    return written


def _size(cap: cv2.VideoCapture) -> tuple[int, int]:
    return int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))


def _extradata(cap: cv2.VideoCapture) -> np.ndarray:
    """The codec header (MPEG-4's VOL) of the stream ``cap`` reads packets from."""
    index = int(cap.get(cv2.CAP_PROP_CODEC_EXTRADATA_INDEX))
    ok, extra = cap.retrieve(flag=index)
    if not ok or extra is None:
        return np.zeros(0, np.uint8)
    return np.asarray(extra, np.uint8).reshape(-1)
