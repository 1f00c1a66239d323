"""``mirror swap-image`` and ``mirror swap-video``: offline swaps of files.

Before anything is opened: an output that is the input or the identity photo
(after resolving links) is refused, and the identity photo's pixel count is
checked from its header. Outputs are written beside the target and renamed
into place only once complete and checked, so a failure (a full disk
included) exits 1 and leaves the old output as it was.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from appliance.cli.common import ProgressBar, add_config_argument, load_cli_settings
from appliance.errors import NoFaceError
from appliance.fileio import refuse_same_file
from appliance.media.frames import Frame
from appliance.media.stills import save_still
from appliance.media.video_sink import VideoFileSink, check_writable
from appliance.media.video_source import VideoFileSource, frame_count
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_processor, resolve_photo
from appliance.vision.identity import read_image
from appliance.vision.pixel_limit import check_image_file

logger = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    img = sub.add_parser("swap-image", help="swap the identity onto the faces of one image")
    _common(img)
    img.add_argument("--output", required=True, type=Path, help="output .png or .jpg")
    img.set_defaults(handler=_swap_image)
    vid = sub.add_parser("swap-video", help="swap the identity onto the faces of a video")
    _common(vid)
    vid.add_argument("--output", required=True, type=Path, help="output .mp4")
    vid.set_defaults(handler=_swap_video)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--identity", required=True, help="identity photo (file or asset name)")
    parser.add_argument("--input", required=True, type=Path, help="input file")
    parser.add_argument("--all-faces", action="store_true", help="swap every face, not the largest")
    add_config_argument(parser)


def _checked_paths(args: argparse.Namespace, store: ModelStore) -> None:
    """Refuse an output that is an input, and an identity photo over the pixel limit."""
    identity = resolve_photo(args.identity, store)
    refuse_same_file(args.output, args.input, identity)
    if identity.is_file():
        check_image_file(identity)


def _swap_image(args: argparse.Namespace) -> int:
    settings = load_cli_settings(args)
    store = ModelStore()
    _checked_paths(args, store)
    image = read_image(args.input)
    check_writable(args.output)
    processor = build_processor(
        settings,
        store,
        args.identity,
        max_faces=settings.detector.max_faces if args.all_faces else 1,
    )
    frame = processor.process(Frame(image=image, index=0, capture_ns=0))
    if not frame.faces:
        raise NoFaceError(f"{args.input}: no face found; nothing to swap")
    drawn = processor.labeler.text  # the label as drawn: the disclosure and the venue's words
    save_still(args.output, frame.image, ai_generated=frame.swapped, label_text=drawn)
    print(f"{args.output}: {frame.faces} face(s) swapped, labelled {drawn!r}")
    return 0


def _swap_video(args: argparse.Namespace) -> int:
    settings = load_cli_settings(args)
    store = ModelStore()
    _checked_paths(args, store)
    source = VideoFileSource(args.input, paced=False)
    processor = build_processor(
        settings,
        store,
        args.identity,
        max_faces=settings.detector.max_faces if args.all_faces else 1,
    )
    total = frame_count(args.input)
    swapped = frames = 0
    bar = ProgressBar(total, "swap-video")
    with VideoFileSink(args.output, fps=source.fps, size=source.size) as sink, source:
        try:
            for frame in source:
                # smoothing runs on the clip's own clock, not on how fast it decodes
                frame.capture_ns = round(frame.index * 1e9 / source.fps)
                processor.process(frame)
                sink.write(frame)
                frames += 1
                swapped += int(frame.swapped)
                bar.update(frames)
        except BaseException:
            sink.discard()  # a half-swapped video never replaces the output
            raise
        sink.stop()  # finishes, checks and renames the file; raises if it cannot
    bar.close()
    print(f"{args.output}: {frames} frames, {swapped} with a swapped face (labelled)")
    return 0
