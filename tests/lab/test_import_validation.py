"""`judgments import` validates every row and reads only what it may: a row it cannot place is
named and changes nothing; a file it cannot read (too large, not a regular file, a cell too long,
a malformed BEIR file, a damaged or forged zip) is one line naming the file and the row or
member, exit 1, and the stored judgments stay as they were."""

from __future__ import annotations

import io
import json
import os
import struct
import zipfile

import pytest

from rag_core.cli import main
from rag_core.lab.importing import ImportFileError
from rag_core.lab.judgments import load_judgments, make_judgment, passages_of, set_grade
from rag_core.lab.transfer import export_judgments, import_judgments
from tests.support import SMALL_PDFS

DPR = SMALL_PDFS[1]


@pytest.fixture()
def lab(lab_library):
    """The lab's collection with one judgment already (the one no bad import may touch)."""
    index = lab_library.load_index("papers")
    passages = passages_of(index, lab_library.documents("papers"))
    set_grade(lab_library, "papers", make_judgment("kept question", passages, 7, 2, index.chunks[7]["text"]))
    return lab_library


def _dpr(lab):
    doc = next(d for d in lab.documents("papers") if d["source"] == DPR)
    index = lab.load_index("papers")
    chunks = [c for c in index.chunks if c["doc_id"] == doc["doc_id"]]
    return doc["sha256"], chunks


def _stored(lab) -> object:
    return lab.store.read_data("papers", "judgments")


def test_each_row_is_validated_and_a_bad_one_changes_nothing(lab, tmp_path):
    sha, chunks = _dpr(lab)
    c, other = chunks[3], chunks[4]
    good_place = f"{sha},{c['start']},{c['end']}"
    rows = [
        f"q spans the whole paper,{DPR},,2,{sha},-5,999999999999",  # the row: refused
        f"q1,{DPR},,1e9,{good_place}",
        f"q2,{DPR},,3abc,{good_place}",
        f"q3,{DPR},,0x3,{good_place}",
        f"q4,{DPR},,inf,{good_place}",
        f"q5,{DPR},,nan,{good_place}",
        f"q6,{DPR},,-1,{good_place}",
        f"q7,{DPR},,4,{good_place}",
        f"q8,{DPR},,2.5,{good_place}",
        f"q9,{DPR},,,{good_place}",
        f"q10,{DPR},,2,{sha},1e309,1e309",
        f"q11,{DPR},,2,{sha},{c['end']},{c['start']}",
        f"q12,{DPR},,2,{sha},{c['start']},{c['end'] + 10**9}",  # past the end of the document
        f"q13,{DPR},,2,{sha},{c['start']},{other['end']}",  # two passages, no quote
        f"q14,{DPR},,2,{good_place},{other['start']},{other['end']}",  # evidence outside the passage
        f"ok exact,{DPR},,3,{good_place}",
        f"ok label,{DPR},,3 exact,{good_place}",
        f"ok decimal,{DPR},,2.0,{good_place}",
        f"ok quoted,{DPR},,'1,{good_place}",
    ]
    sheet = tmp_path / "rows.csv"
    sheet.write_text("query,document,quote,grade,doc_sha256,start,end,quote_start,quote_end\n"
                     + "\n".join(r if r.count(",") == 8 else r + ",," for r in rows) + "\n", encoding="utf-8")
    before = load_judgments(lab, "papers").records()
    report = import_judgments(lab, "papers", sheet)
    assert report.added == 4 and report.rejected == len(rows) - 4, report.to_dict()
    assert [n for n, _ in report.problems] == list(range(2, 17))
    texts = dict(report.problems)
    assert "not a place" in texts[2] and "0, 1, 2 or 3" in texts[3] and "'3abc'" in texts[4]
    assert "not a place" in texts[12] and "outside" in texts[14] and "not one passage" in texts[15]
    assert "not inside the passage" in texts[16]
    judgments = load_judgments(lab, "papers")
    assert set(judgments.records()) >= set(before)
    passages = passages_of(lab.load_index("papers"), lab.documents("papers"))
    for query, grade in (("ok exact", 3), ("ok label", 3), ("ok decimal", 2), ("ok quoted", 1)):
        grades = judgments.grades(query, passages)
        assert len(grades) == 1 and next(iter(grades.values())).grade == grade  # one passage per row


def test_a_place_that_is_no_passage_here_is_placed_by_its_quote(lab, tmp_path):
    sha, chunks = _dpr(lab)
    c = chunks[5]
    quote = " ".join(c["text"].split()[10:20])
    sheet = tmp_path / "other-chunking.csv"
    sheet.write_text(f"query,document,quote,grade,doc_sha256,start,end\nq,{DPR},\"{quote}\",2,{sha},"
                     f"{c['start'] + 1},{c['start'] + 300}\n", encoding="utf-8")
    report = import_judgments(lab, "papers", sheet)
    assert report.added == 1 and "placed by its quote" in report.warnings[0][1]
    judged = next(j for j in load_judgments(lab, "papers") if j.query == "q")
    assert (judged.start, judged.end) in {(x["start"], x["end"]) for x in chunks}


def test_the_cli_names_each_refused_row_and_exits_1(lab, tmp_path, capsys):
    sheet = tmp_path / "sheet.csv"
    sheet.write_text(f"query,document,quote,grade\nq,{DPR},Dense Passage Retriever,3abc\n", encoding="utf-8")
    assert main(["--data-dir", str(lab.root), "judgments", "import", "papers", str(sheet)]) == 1
    out = capsys.readouterr().out
    assert f"{sheet}, row 2: the grade '3abc' is not 0, 1, 2 or 3" in out


# ---------------------------------------------------------------- files that cannot be read


def _zip(files: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=compression) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def _patch_central(data: bytes, member: str, offset: int, value: bytes) -> bytes:
    """``data`` with bytes at ``offset`` of ``member``'s central directory entry replaced."""
    data = bytearray(data)
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        length = struct.unpack("<H", data[at + 28:at + 30])[0]
        if data[at + 46:at + 46 + length].decode() == member:
            data[at + offset:at + offset + len(value)] = value
        at = data.find(b"PK\x01\x02", at + 1)
    return bytes(data)


@pytest.fixture()
def export_zip(lab, tmp_path) -> bytes:
    path = tmp_path / "export.zip"
    export_judgments(lab, "papers", path)
    return path.read_bytes()


def _hostile_files(tmp_path, export_zip) -> dict[str, tuple[str, str]]:
    """name -> (path, what the message must say)."""
    out: dict[str, tuple[str, str]] = {}
    big = tmp_path / "big-cell.csv"
    big.write_text("query,document,quote,grade\nq," + DPR + "," + "x" * 200_000 + ",2\n", encoding="utf-8")
    out["big cell"] = (str(big), "row 2: cannot be read as CSV (a cell is longer than 131,072 characters)")
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    out["fifo"] = (str(fifo), "is not a regular file")
    zero = tmp_path / "zero.csv"
    zero.symlink_to("/dev/zero")
    out["/dev/zero"] = (str(zero), "is not a regular file")
    sparse = tmp_path / "sparse.csv"
    with open(sparse, "wb") as handle:
        handle.truncate(4 * 1024 ** 3)
    out["4 GB sparse"] = (str(sparse), "over the limit of 50.0 MiB")
    with zipfile.ZipFile(io.BytesIO(export_zip)) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    for name, line, says in (("list line", b"[1, 2]\n", "line 2: is a JSON list"),
                             ("no _id", b'{"text": "x"}\n', "line 2: has no _id"),
                             ("not json", b"{nope\n", "line 2: is not JSON"),
                             ("deep", b"[" * 100_000 + b"\n", "line 2: is not JSON")):
        folder = tmp_path / name.replace(" ", "-")
        (folder / "qrels").mkdir(parents=True)
        (folder / "queries.jsonl").write_bytes(members["queries.jsonl"] + line)
        (folder / "qrels" / "test.tsv").write_bytes(members["qrels/test.tsv"])
        out[f"BEIR {name}"] = (str(folder), f"queries.jsonl, {says}")
    sparse_beir = tmp_path / "sparse-beir"
    (sparse_beir / "qrels").mkdir(parents=True)
    (sparse_beir / "qrels" / "test.tsv").write_bytes(members["qrels/test.tsv"])
    with open(sparse_beir / "queries.jsonl", "wb") as handle:
        handle.truncate(4 * 1024 ** 3)
    out["BEIR 4 GB sparse queries.jsonl"] = (str(sparse_beir), "queries.jsonl: is 4.0 GiB")
    for name, data, says in (
            ("bad CRC", _patch_central(export_zip, "queries.jsonl", 16, b"\0\0\0\0"),
             "member queries.jsonl: is damaged (Bad CRC-32"),
            ("size says less", _patch_central(export_zip, "queries.jsonl", 24, struct.pack("<I", 10)),
             "member queries.jsonl: is damaged"),
            ("size says 3.9 GiB", _patch_central(export_zip, "queries.jsonl", 24, struct.pack("<I", 0xFFFF0000)),
             "member queries.jsonl: declares 4.0 GiB, over the limit"),
            ("bzip2 member", _zip(members, zipfile.ZIP_BZIP2), "uses compression method 12"),
            ("no qrels", _zip({"queries.jsonl": members["queries.jsonl"]}), "holds no queries.jsonl and qrels"),
            ("too many entries", _zip({f"x{i}": b"" for i in range(10_001)}, zipfile.ZIP_STORED),
             "declares 10,001 entries"),
            ("not a zip", b"PK\x03\x04 truncated", "is not a"),
    ):
        path = tmp_path / (name.replace(" ", "-") + ".zip")
        path.write_bytes(data)
        out[f"zip {name}"] = (str(path), says)
    return out


def test_a_file_that_cannot_be_read_is_one_line_and_changes_nothing(lab, tmp_path, export_zip, capsys):
    before = _stored(lab)
    for what, (path, says) in _hostile_files(tmp_path, export_zip).items():
        assert main(["--data-dir", str(lab.root), "judgments", "import", "papers", path]) == 1, what
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and err.startswith("rag-core: error: "), (what, err)
        assert path in err and says in err, (what, err)
        assert "Traceback" not in err
        assert _stored(lab) == before, what
        with pytest.raises(ImportFileError):  # the library call raises the same, naming the file
            import_judgments(lab, "papers", path)


def test_an_uploaded_zip_with_a_forged_size_is_refused(lab, export_zip):
    before = _stored(lab)
    forged = _patch_central(export_zip, "qrels/test.tsv", 24, struct.pack("<I", 1))
    with pytest.raises(ImportFileError, match=r"the uploaded file, member qrels/test\.tsv: is damaged"):
        import_judgments(lab, "papers", forged)
    assert _stored(lab) == before
    report = import_judgments(lab, "papers", export_zip)
    assert report.rejected == 0 and json.dumps(report.to_dict())
