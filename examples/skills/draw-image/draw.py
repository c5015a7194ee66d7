"""Draw a gradient PNG with an optional caption, then print a JSON summary."""
import argparse
import json
import os
import sys

from PIL import Image, ImageDraw


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--caption", default="")
    parser.add_argument("--width", type=int, default=320)
    parser.add_argument("--height", type=int, default=200)
    args = parser.parse_args()
    for name in ("width", "height"):
        value = getattr(args, name)
        if not 16 <= value <= 4096:
            print(f"--{name} must be between 16 and 4096, got {value}", file=sys.stderr)
            return 2

    image = Image.new("RGB", (args.width, args.height))
    pixels = image.load()
    for x in range(args.width):
        for y in range(args.height):
            pixels[x, y] = (
                int(255 * x / max(1, args.width - 1)),
                int(255 * y / max(1, args.height - 1)),
                160,
            )
    if args.caption:
        ImageDraw.Draw(image).text((10, 10), args.caption, fill=(255, 255, 255))

    folder = os.path.dirname(args.out)
    if folder:
        os.makedirs(folder, exist_ok=True)
    image.save(args.out, format="PNG")
    print(json.dumps({"path": args.out, "width": args.width, "height": args.height,
                      "bytes": os.path.getsize(args.out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
