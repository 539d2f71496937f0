"""Fuzzing the importers: mutated CSVs and zips (bytes flipped, cut, repeated, hostile cells and
size fields) never give a traceback; a file that cannot be read changes nothing; a file whose
rows can be read changes only what its valid rows say (no judgment lost, every judgment on one
passage of the collection with a grade 0-3), and the collection still checks clean."""

from __future__ import annotations

import io
import random
import struct
import zipfile

import pytest

from rag_core.lab.importing import ImportFileError
from rag_core.lab.judgments import JudgmentError, load_judgments, make_judgment, passages_of, set_grade
from rag_core.lab.transfer import export_judgments, import_judgments

HOSTILE_CELLS = ["1e309", "inf", "-inf", "nan", "-5", "999999999999999999999", "0x3", "3abc", "=1+2", "'", '"',
                 "\x00", "\u202e", "\x1b[2J", "x" * 5000, "٣", "³", "1_000", " 2 ", "2\n3", ";", "\t"]


def _mutate_text(rng: random.Random, text: str) -> str:
    lines = text.split("\r\n")
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        n = rng.randrange(len(lines))
        if choice < 0.4:  # a hostile cell in place of another
            cells = lines[n].split(",")
            cells[rng.randrange(len(cells))] = rng.choice(HOSTILE_CELLS)
            lines[n] = ",".join(cells)
        elif choice < 0.55:
            lines.insert(n, lines[rng.randrange(len(lines))])  # a row repeated
        elif choice < 0.7:
            lines[n] = lines[n][: rng.randrange(len(lines[n]) + 1)]  # a row cut short
        elif choice < 0.8:
            lines[n] = lines[n].replace(",", rng.choice([";", "\t", ",,", '","']), 1)
        else:
            at = rng.randrange(len(text) + 1)
            return text[:at] + rng.choice(HOSTILE_CELLS) + text[at:]
    return "\r\n".join(lines)


def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    choice = rng.random()
    if choice < 0.35:
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif choice < 0.5:
        data = data[: rng.randrange(len(data))]
    elif choice < 0.85:  # a size, CRC or offset field of a central directory entry
        at = data.find(b"PK\x01\x02")
        entries = []
        while at >= 0:
            entries.append(at)
            at = data.find(b"PK\x01\x02", at + 1)
        if entries:
            at = rng.choice(entries)
            offset = rng.choice([16, 20, 24, 42])
            data[at + offset:at + offset + 4] = struct.pack("<I", rng.choice([0, 1, 10, 2**31, 0xFFFFFFFF,
                                                                              rng.randrange(2**32)]))
    else:
        at = rng.randrange(len(data))
        data[at:at] = data[rng.randrange(len(data)):][:rng.randint(1, 200)]
    return bytes(data)


def _assert_sound(lib, before, stored_before, outcome) -> None:
    after = load_judgments(lib, "papers")
    if isinstance(outcome, JudgmentError):
        assert lib.store.read_data("papers", "judgments") == stored_before, outcome  # nothing written
        return
    passages = passages_of(lib.load_index("papers"), lib.documents("papers"))
    kept = {(j.query, j.key) for j in after}
    assert all((j.query, j.key) in kept for j in before), "a judgment was lost"
    for j in after:
        assert j.key in passages.by_key and j.grade in (0, 1, 2, 3), j
        if j.quote_start is not None:
            assert j.start <= j.quote_start < j.quote_end <= j.end, j


@pytest.fixture()
def judged(lab_library, tmp_path):
    lib = lab_library
    index = lib.load_index("papers")
    passages = passages_of(index, lib.documents("papers"))
    for q, (i, grade) in enumerate(((3, 3), (11, 1), (40, 0), (62, 2), (70, 3))):
        set_grade(lib, "papers", make_judgment(f"question {q % 3}", passages, i, grade, index.chunks[i]["text"]))
    export_judgments(lib, "papers", tmp_path / "seed.csv")
    export_judgments(lib, "papers", tmp_path / "seed.zip")
    return lib, (tmp_path / "seed.csv").read_bytes(), (tmp_path / "seed.zip").read_bytes()


@pytest.mark.parametrize("seed", range(4))
def test_mutated_csvs_never_give_a_traceback(judged, seed):
    lib, csv_bytes, _ = judged
    rng = random.Random(1000 + seed)
    text = csv_bytes.decode("utf-8-sig")
    for _ in range(40):
        before = list(load_judgments(lib, "papers"))
        stored_before = lib.store.read_data("papers", "judgments")
        data = _mutate_text(rng, text).encode(rng.choice(["utf-8-sig", "utf-8"]), "surrogatepass")
        if rng.random() < 0.2:
            data = _mutate_bytes(rng, data)
        try:
            outcome = import_judgments(lib, "papers", data, kind="csv")
        except JudgmentError as exc:  # a message; never another exception
            outcome = exc
        _assert_sound(lib, before, stored_before, outcome)
    assert lib.check("papers").problems == []


@pytest.mark.parametrize("seed", range(4))
def test_mutated_zips_never_give_a_traceback(judged, seed):
    lib, _, zip_bytes = judged
    rng = random.Random(2000 + seed)
    with zipfile.ZipFile(io.BytesIO(zip_bytes)) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    for _ in range(40):
        before = list(load_judgments(lib, "papers"))
        stored_before = lib.store.read_data("papers", "judgments")
        if rng.random() < 0.4:  # mutated content, in a well-formed archive
            mutated = dict(members)
            name = rng.choice(["queries.jsonl", "qrels/test.tsv"])
            mutated[name] = _mutate_text(rng, mutated[name].decode()).encode("utf-8", "surrogatepass")
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
                for member, data in mutated.items():
                    archive.writestr(member, data)
            data = out.getvalue()
        else:
            data = _mutate_bytes(rng, zip_bytes)
        try:
            outcome = import_judgments(lib, "papers", data, kind="beir")
        except JudgmentError as exc:
            outcome = exc
        _assert_sound(lib, before, stored_before, outcome)
    assert lib.check("papers").problems == []


def test_a_file_error_is_an_import_file_error(judged):
    lib, _, zip_bytes = judged
    with pytest.raises(ImportFileError, match="the uploaded file"):
        import_judgments(lib, "papers", zip_bytes[:100], kind="beir")
