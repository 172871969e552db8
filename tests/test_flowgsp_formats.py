"""JSON interchange format and profile sniffing."""

import json

import pytest

from whatif.models.errors import ModelInputError
from whatif.models.flowgsp import parse_json, read_json, read_profile, write_json

DOC = {"methods": [{"name": "m", "vertices": [{"id": 0, "weight": 1.5, "attributes": ["A"]},
                                              {"id": 1, "weight": 2, "attributes": ["B", "A"]}],
                    "edges": [[0, 1, 4], [1, 0, 0.5]]}]}


def test_json_round_trip(tmp_path):
    f = tmp_path / "g.json"
    f.write_text(json.dumps(DOC))
    efg = read_json(f)
    out = tmp_path / "h.json"
    write_json(efg, out)
    again = read_json(out)
    assert again.to_methods() == efg.to_methods()
    assert efg.to_methods()[0]["vertices"][1] == {"id": 1, "weight": 2, "attributes": ["A", "B"]}
    assert efg.to_methods()[0]["vertices"][0]["weight"] == 1.5


def test_malformed_json_says_where(tmp_path):
    f = tmp_path / "bad.json"
    f.write_text('{"methods": [\n  {"name": "m",\n   "vertices": [}\n]}')
    with pytest.raises(ModelInputError) as info:
        read_profile(f)
    assert str(info.value).startswith(f"{f}: malformed JSON at line 3 column 17: Expecting value")


@pytest.mark.parametrize("text, message", [
    ("[1, 2]", "expected a JSON object with a 'methods' list"),
    ('{"methods": {}}', "'methods' must be a list of methods"),
    ('{"methods": [{"name": "m", "vertices": [], "edges": 3}]}', "methods[0]: 'edges' must be a list"),
    ('{"methods": [{"name": "m", "vertices": [{"id": "a"}], "edges": []}]}', "methods[0].vertices[0].id"),
])
def test_structural_errors(text, message):
    with pytest.raises(ModelInputError) as info:
        parse_json(text, source="s.json")
    assert message in str(info.value)


def test_profile_sniffing(tmp_path):
    with pytest.raises(ModelInputError, match="no such file"):
        read_profile(tmp_path / "missing.json")
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ModelInputError, match="not UTF-8 text"):
        read_profile(binary)
    named_db = tmp_path / "blob.db"                 # named as a database: never read as JSON
    named_db.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ModelInputError, match="not a SQLite database"):
        read_profile(named_db)
