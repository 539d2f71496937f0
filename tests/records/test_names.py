"""Tests of names in rag_core.records: split for BibTeX's and CSL's fields, and back."""

from __future__ import annotations

import json

import pytest

from rag_core.records.bibtex import parse_bibtex, records_to_bibtex
from rag_core.records.csl import parse_csl_json, records_to_csl
from rag_core.records.record import first_surname, split_name

NAMES = ["Jan van der Berg", "Ludwig van Beethoven", "Martin Luther King, Jr", "Patrick Lewis", "Plato",
         "Jean-Pierre de la Fontaine", "George van den Driessche", "Charles de Gaulle, III"]


@pytest.mark.parametrize(("name", "parts"), [
    ("Jan van der Berg", ("Jan", "van der", "Berg", "")),
    ("van der Berg, Jan", ("Jan", "van der", "Berg", "")),
    ("Lewis, Patrick", ("Patrick", "", "Lewis", "")),
    ("Martin Luther King, Jr", ("Martin Luther", "", "King", "Jr")),
    ("Martin Luther King Jr.", ("Martin Luther", "", "King", "Jr.")),
    ("Vladimir Karpukhin V", ("Vladimir Karpukhin", "", "V", "")),  # a trailing V is more often an initial
    ("Plato", ("", "", "Plato", "")),
])
def test_a_name_is_split_with_its_particles_and_suffix(name, parts):
    assert split_name(name) == parts


def test_bibtex_export_keeps_particles_and_suffixes_with_the_family_name():
    bib = records_to_bibtex([{"title": "T", "authors": NAMES, "year": 2020}])
    assert "van der Berg, Jan and van Beethoven, Ludwig and King, Jr, Martin Luther and Lewis, Patrick and " \
           "Plato and de la Fontaine, Jean-Pierre" in bib  # was "Berg, Jan van der": a given name "Jan van der"
    records, failed = parse_bibtex(bib)
    assert failed == 0 and records[0]["authors"] == NAMES  # bibtexparser reads them back as they were


def test_csl_export_gives_the_particle_and_suffix_their_fields_and_reads_them_back():
    items = records_to_csl([{"title": "T", "authors": NAMES, "year": 2020}])
    authors = items[0]["author"]
    assert authors[0] == {"family": "Berg", "given": "Jan", "non-dropping-particle": "van der"}
    assert authors[2] == {"family": "King", "given": "Martin Luther", "suffix": "Jr"}
    assert authors[4] == {"literal": "Plato"}
    assert parse_csl_json(json.loads(json.dumps(items)))[0]["authors"] == NAMES


def test_the_first_surname_is_not_a_suffix():
    assert [first_surname(n) for n in ("Martin Luther King, Jr", "Lewis, Patrick", "Martin Luther King Jr.",
                                       "van der Berg, Jan")] == ["King", "Lewis", "King", "van der Berg"]
