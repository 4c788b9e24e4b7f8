"""Pseudonyms: one per original value, none an original, missing values kept, chunk by chunk
as in memory; hmac's key never shown and never given as a value; real Faker values."""

from __future__ import annotations

import hmac
import json
import os
import pickle
import re
import subprocess
import sys
import uuid
from hashlib import sha256

import numpy as np
import pandas as pd
import pytest
from faker import Faker

import gpu_avatar as ga
from gpu_avatar.encoding import fresh_identifiers
from gpu_avatar.encoding.pseudonyms import PII, Pseudonym, Pseudonymizer, pseudonymize

KEY_ENV = "GA_TEST_PSEUDONYM_KEY"
KEY = "k3y-0f-the-t3st5-n0t-a-real-0ne"
OTHER_KEY = "an0ther-k3y-for-the-t3sts-0nly"
SPECS = {
    "fresh": Pseudonym(),
    "integer": Pseudonym("integer"),
    "pattern": Pseudonym("pattern", pattern="P{:05d}"),
    "uuid4": Pseudonym("uuid4"),
    "constant": Pseudonym("constant", value="REDACTED"),
    "hmac": Pseudonym("hmac", key_env=KEY_ENV),
    "fake": Pseudonym("fake", pii="email"),
    "fake_fr": Pseudonym("fake", pii="name", locale="fr_FR"),
}
# Originals that the simplest pseudonyms would repeat: P00001, 17 (and "00004", which reads
# as 4), avatar_0.
TEXT = pd.Series(["P00001", "b", "a", "b", None, "P00002", "17", "a", "avatar_0", "00004"],
                 name="code")
INTEGERS = pd.Series([2, 1, 2, 5, None, 3, 4], dtype="Int64", name="id")


@pytest.fixture(autouse=True)
def hmac_key_in_the_environment(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


def digest(value: str, key: str = KEY, length: int = 16) -> str:
    return hmac.new(key.encode(), value.encode(), sha256).hexdigest()[:length]


def texts(column: pd.Series) -> set[str]:
    """The originals as a CSV file writes them."""
    return {v if isinstance(v, str) else str(int(v)) if float(v).is_integer() else str(v)
            for v in column.dropna()}


def assert_no_original_released(column: pd.Series, pseudonyms: pd.Series) -> None:
    """No pseudonym is an original, as text or as the number it reads as."""
    originals = texts(column)
    numbers = set(pd.to_numeric(pd.Series(sorted(originals)), errors="coerce").dropna())
    released = texts(pseudonyms)
    assert not released & originals
    assert not set(pd.to_numeric(pd.Series(sorted(released)), errors="coerce")) & numbers


def column(n: int = 400, seed: int = 0, integers: bool = False) -> pd.Series:
    """Repeated values (and P00003, which pattern skips), a tenth missing."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 150, n)
    if integers:
        out = pd.Series(values, dtype="Int64", name="id")
    else:
        out = pd.Series([f"c{v}" if v else "P00003" for v in values], dtype=object, name="code")
    out[rng.random(n) < 0.1] = None
    return out


# --- every strategy ---------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", SPECS)
@pytest.mark.parametrize("original", [TEXT, INTEGERS], ids=["text", "integers"])
def test_one_pseudonym_per_value_none_an_original_missing_values_kept(strategy, original):
    out = pseudonymize(original, SPECS[strategy], seed=0)
    assert out.index.equals(original.index) and out.name == original.name
    assert out.isna().tolist() == original.isna().tolist()
    mapping = {}
    for value, pseudonym in zip(original, out, strict=True):
        if not pd.isna(value):
            assert mapping.setdefault(value, pseudonym) == pseudonym  # one per value
    distinct = len(set(mapping.values()))
    assert distinct == (1 if strategy == "constant" else len(mapping))  # one value per one
    assert_no_original_released(original, out)


@pytest.mark.parametrize("strategy", SPECS)
@pytest.mark.parametrize("integers", [False, True], ids=["text", "integers"])
def test_chunk_by_chunk_in_any_order_is_the_whole_column(strategy, integers):
    original = column(integers=integers)
    whole = pseudonymize(original, SPECS[strategy], seed=5)
    chunks = [original.iloc[start:start + 37] for start in range(0, len(original), 37)]
    streamed = Pseudonymizer(SPECS[strategy], original.name, seed=5)
    for chunk in chunks:
        streamed.add(chunk)
    parts = [streamed.pseudonyms(chunk) for chunk in reversed(chunks)]
    pd.testing.assert_series_equal(pd.concat(parts[::-1]), whole)


@pytest.mark.parametrize("strategy", SPECS)
@pytest.mark.parametrize("integers", [False, True], ids=["text", "integers"])
def test_partitions_read_apart_and_merged_in_order_are_the_whole_column(strategy, integers):
    original = column(integers=integers)
    whole = pseudonymize(original, SPECS[strategy], seed=5)
    partitions = [Pseudonymizer(SPECS[strategy], original.name, seed=5).add(original.iloc[a:b])
                  for a, b in ((0, 150), (150, 151), (151, 400))]
    merged = partitions[0]
    for partition in partitions[1:]:
        merged.merge(partition)
    pd.testing.assert_series_equal(merged.pseudonyms(original), whole)
    with pytest.raises(ga.AvatarError, match="merged after pseudonyms were drawn"):
        merged.merge(partitions[1])


@pytest.mark.parametrize("strategy", SPECS)
def test_a_foreign_key_mapped_with_its_parent_key_gets_its_parents_pseudonyms(strategy):
    """A pseudonymized parent and child table: the foreign key goes through the parent key's
    Pseudonymizer, and every reference keeps its parent."""
    parent = pd.Series([f"p{i}" for i in range(30)], name="patient_id")
    child = pd.Series(np.random.default_rng(1).choice(parent, 80), name="patient_id")
    child[3] = None
    shared = Pseudonymizer(SPECS[strategy], "patient_id", seed=2).add(parent).add(child)
    new_parent = dict(zip(parent, shared.pseudonyms(parent), strict=True))
    new_child = shared.pseudonyms(child)
    assert new_child.isna().tolist() == child.isna().tolist()
    assert new_child.dropna().tolist() == [new_parent[v] for v in child.dropna()]


@pytest.mark.parametrize("strategy", ["uuid4", "fake", "fake_fr"])
def test_drawn_pseudonyms_are_the_same_for_a_seed(strategy):
    original = column(60)
    first = pseudonymize(original, SPECS[strategy], seed=3)
    pd.testing.assert_series_equal(first, pseudonymize(original, SPECS[strategy], seed=3))
    pd.testing.assert_series_equal(
        first, pseudonymize(original, SPECS[strategy], seed=np.random.SeedSequence(3)))
    other = pseudonymize(original, SPECS[strategy], seed=4)
    assert first.dropna().tolist() != other.dropna().tolist()


# --- the strategies one by one -----------------------------------------------------------------


def test_fresh_deals_todays_fresh_identifiers_in_a_seeded_order():
    for original in (pd.Series(["a", "avatar_3", "c"]), pd.Series([4, 0, 2, 1], dtype="int64")):
        out = pseudonymize(original, seed=0)
        assert sorted(out) == sorted(fresh_identifiers(original, len(original)))
    values = pd.Series(np.arange(100, 300))
    orders = {tuple(pseudonymize(values, seed=seed)) for seed in range(3)}
    assert len(orders) == 3  # the row order does not show


def dealt(series: pd.Series, spec: str, seed: int = 0) -> list:
    """The pseudonyms of ``series``' distinct values, in order of first appearance."""
    out = pseudonymize(series, spec, seed=seed)
    return list(dict.fromkeys(out.tolist()))


def test_integer_and_pattern_deal_1_2_3_skipping_originals_in_a_seeded_order():
    out = pseudonymize(pd.Series(["c", "a", "c", "b"]), "pseudonym:integer", seed=0)
    assert out[0] == out[2] and sorted(set(out)) == [1, 2, 3]  # one per value
    # 1 and 2 are originals; "3" reads as 3
    assert sorted(dealt(pd.Series([2, 1, 2, 5]), "pseudonym:integer")) == [3, 4, 6]
    assert sorted(dealt(pd.Series(["3", "x", "1"]), "pseudonym:integer")) == [2, 4, 5]
    pattern = "pseudonym:pattern:P{:05d}"
    assert sorted(dealt(pd.Series(["P00001", "u", "v", "u"]), pattern)) == [
        "P00002", "P00003", "P00004"]  # fmt: skip
    # "00001" reads as the original 1
    assert sorted(dealt(pd.Series([1, 7]), "pseudonym:pattern:{:05d}")) == ["00002", "00003"]
    assert pseudonymize(pd.Series([7, None, 7]), "pseudonym:integer").dtype == "Int64"
    # neither the first appearance nor the value's rank shows: the order changes with the seed
    values = pd.Series([f"v{i:03d}" for i in range(200)])
    orders = {tuple(dealt(values, "pseudonym:integer", seed)) for seed in range(3)}
    assert len(orders) == 3 and tuple(range(1, 201)) not in orders
    assert dealt(values, "pseudonym:integer", 1) == dealt(values, "pseudonym:integer", 1)


def test_uuid4_gives_version_4_uuids():
    out = pseudonymize(column(50), "pseudonym:uuid4", seed=0).dropna()
    assert all(uuid.UUID(value).version == 4 and str(uuid.UUID(value)) == value for value in out)


def test_a_constant_that_is_an_original_value_is_refused():
    out = pseudonymize(pd.Series([3, None, 5], dtype="Int64"), Pseudonym("constant", value=0))
    assert out.tolist() == [0, pd.NA, 0] and out.dtype == "Int64"
    for value in ("b", "3", 3):
        with pytest.raises(ga.AvatarError, match="constant value is one of the column's"):
            pseudonymize(pd.Series(["a", "b", 3], dtype=object), Pseudonym("constant", value=value))
    with pytest.raises(ga.AvatarError, match="empty text reads back as missing"):
        Pseudonym("constant", value="")


# --- hmac -------------------------------------------------------------------------------------


def test_hmac_is_the_keyed_digest_whatever_the_seed_the_type_or_the_spec_object():
    expected = [digest("12345"), digest("abc"), digest("12345"), None]
    for seed in (0, 1):
        out = pseudonymize(pd.Series(["12345", "abc", "12345", None]), SPECS["hmac"], seed=seed)
        assert out.tolist() == expected
    # an identifier read as an integer, a float (a column with a missing value) or text
    as_numbers = pseudonymize(pd.Series([12345, None]), "pseudonym:hmac:key_env=" + KEY_ENV)
    assert as_numbers.tolist() == [digest("12345"), None]
    long = pseudonymize(pd.Series(["abc"]), Pseudonym("hmac", key_env=KEY_ENV, length=64))
    assert long[0] == digest("abc", length=64)


def test_hmac_is_the_same_in_another_process_with_the_key_in_a_file(tmp_path):
    values = ["p1", "p2", "p1", "p3"]
    key_file = tmp_path / "hmac.key"
    key_file.write_text(KEY + "\n")  # an editor's trailing newline is not part of the key
    code = ("import json, sys; import pandas as pd; "
            "from gpu_avatar.encoding.pseudonyms import pseudonymize; "
            "print(json.dumps(pseudonymize(pd.Series(json.loads(sys.argv[1])), "
            "{'strategy': 'hmac', 'key_file': sys.argv[2]}).tolist()))")  # fmt: skip
    run = subprocess.run([sys.executable, "-c", code, json.dumps(values), str(key_file)],
                         capture_output=True, text=True, check=True, env=dict(os.environ))
    assert json.loads(run.stdout) == pseudonymize(pd.Series(values), SPECS["hmac"]).tolist()
    assert json.loads(run.stdout) == [digest(v) for v in values]


def test_another_key_gives_other_pseudonyms(monkeypatch):
    original = column(300)
    ours = set(pseudonymize(original, SPECS["hmac"]).dropna())
    monkeypatch.setenv(KEY_ENV, OTHER_KEY)
    theirs = set(pseudonymize(original, SPECS["hmac"]).dropna())
    assert len(ours) == len(theirs) == original.nunique() and not ours & theirs


def test_an_hmac_collision_raises_and_asks_for_a_longer_length():
    seen = {}
    for i in range(1_000_000):  # a birthday collision at 8 hex digits (32 bits): ~80,000
        short = digest(f"v{i}", length=8)
        if short in seen:
            break
        seen[short] = f"v{i}"
    pair = pd.Series([seen[short], f"v{i}"])
    spec = Pseudonym("hmac", key_env=KEY_ENV, length=8)
    with pytest.raises(ga.AvatarError, match=r"length=8, two of the column's 2 values share") as e:
        pseudonymize(pair, spec)
    assert "give a longer length, e.g. length=" in str(e.value) and KEY not in str(e.value)
    assert pseudonymize(pair, Pseudonym("hmac", key_env=KEY_ENV, length=9)).nunique() == 2
    # a pseudonym that is another original value
    with pytest.raises(ga.AvatarError, match="another original value"):
        pseudonymize(pd.Series(["a", digest("a", length=8)]), spec)


def test_the_key_is_in_no_repr_pickle_or_message(monkeypatch, tmp_path):
    spec = SPECS["hmac"]
    pseudonymizer = Pseudonymizer(spec, "code").add(TEXT)
    pseudonymizer.pseudonyms(TEXT)
    for shown in (repr(spec), str(spec), repr(pseudonymizer), str(pseudonymizer)):
        assert KEY not in shown
    for held in (pickle.dumps(spec), pickle.dumps(pseudonymizer)):
        assert KEY.encode() not in held
    assert pickle.loads(pickle.dumps(pseudonymizer)).pseudonyms(TEXT).equals(
        pseudonymizer.pseudonyms(TEXT))  # fmt: skip
    short = "sh0rt-k3y"
    monkeypatch.setenv(KEY_ENV, short)
    with pytest.raises(ga.AvatarError, match=r"has 9 bytes; it needs at least 16") as e:
        Pseudonymizer(spec, "code")
    assert short not in str(e.value)
    (tmp_path / "short.key").write_text(short)
    with pytest.raises(ga.AvatarError, match="file .*short.key has 9 bytes") as e:
        Pseudonymizer({"strategy": "hmac", "key_file": tmp_path / "short.key"})
    assert short not in str(e.value)


@pytest.mark.parametrize("given", [
    {"strategy": "hmac", "key": KEY},
    {"strategy": "hmac", "secret": KEY},
    f"pseudonym:hmac:key={KEY}",
    f"pseudonym:hmac:length=16,key={KEY}",
])  # fmt: skip
def test_a_key_given_as_a_value_is_refused_and_not_repeated(given):
    with pytest.raises(ga.AvatarError, match="never given as a value.*key_env.*key_file") as e:
        Pseudonym.of(given)
    assert KEY not in str(e.value)


def test_a_key_given_where_a_name_or_a_file_goes_is_not_repeated():
    with pytest.raises(TypeError, match="key") as e:
        Pseudonym("hmac", key=KEY)
    assert KEY not in str(e.value)
    for text in (f"pseudonym:hmac:key_env={KEY}", f"pseudonym:hmac:{KEY}", f"{KEY}:hmac"):
        with pytest.raises(ga.AvatarError) as e:
            Pseudonym.from_text(text)
        assert KEY not in str(e.value)


def test_a_missing_key_says_how_to_give_one(monkeypatch, tmp_path):
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(ga.AvatarError, match=f"column 'code': .*{KEY_ENV} is not set.*export"):
        Pseudonymizer(SPECS["hmac"], "code")  # at once, not after a scan
    with pytest.raises(ga.AvatarError, match="cannot read the file .*absent.key"):
        Pseudonymizer(Pseudonym("hmac", key_file=tmp_path / "absent.key"))
    with pytest.raises(ga.AvatarError, match="exactly one of key_env .* or key_file"):
        Pseudonym("hmac")
    with pytest.raises(ga.AvatarError, match="exactly one of key_env"):
        Pseudonym("hmac", key_env=KEY_ENV, key_file=tmp_path / "a.key")


# --- fake -------------------------------------------------------------------------------------

WORD = r"[^\W\d_]+(?:['-][^\W\d_]+)*\.?"
LOOKS = {
    "email": r"[\w.+-]+@example\.(?:com|net|org)",
    "first_name": rf"{WORD}(?: {WORD})*",
    "last_name": rf"{WORD}(?: {WORD})*",
    "name": rf"{WORD}(?: {WORD})+",
    "phone": r"[+\d(][\d ().x-]{6,}",
    "address": r"[^\n]*\d[^\n]*",
    "text": r"[^\n]+\.",
}
SSN = {"en_US": r"\d{3}-\d{2}-\d{4}", "fr_FR": r"[12]\d{4}[\dAB]{2}\d{8}"}


@pytest.mark.parametrize("locale", ["en_US", "fr_FR"])
@pytest.mark.parametrize("pii", PII)
def test_fake_values_look_real(pii, locale):
    original = pd.Series([f"id{i}" for i in range(40)] * 2)
    out = pseudonymize(original, Pseudonym("fake", pii=pii, locale=locale), seed=0)
    looks = SSN[locale] if pii == "ssn" else LOOKS[pii]
    assert all(re.fullmatch(looks, value) for value in out), out.tolist()
    assert out.nunique() == 40


@pytest.mark.parametrize("locale", ["en_US", "fr_FR"])
@pytest.mark.parametrize("pii", ["first_name", "email"])
def test_fake_never_gives_back_an_original_drawn_by_faker_itself(pii, locale):
    faker = Faker(locale)
    faker.seed_instance(11)
    draw = getattr(faker, PII[pii])
    original = pd.Series([draw() for _ in range(100)], name=pii)  # the commonest ones
    out = pseudonymize(original, Pseudonym("fake", pii=pii, locale=locale), seed=0)
    assert out.nunique() == original.nunique()
    assert_no_original_released(original, out)


def test_fake_stops_when_faker_runs_out_of_distinct_values():
    original = pd.Series([f"id{i}" for i in range(300)])  # fr_FR has ~200 first names
    with pytest.raises(ga.AvatarError, match=r"fake first_name \(fr_FR\) found no new value "
                                             r".*of the 300 needed.*\(name, email\)"):
        pseudonymize(original, Pseudonym("fake", pii="first_name", locale="fr_FR"), seed=0)


def test_fake_without_faker_names_the_extra(monkeypatch):
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "faker", None)  # as if not installed
        with pytest.raises(ga.MissingExtraError, match=r"pip install 'gpu_avatar\[fake\]'"):
            Pseudonymizer(SPECS["fake"])
    with pytest.raises(ga.AvatarError, match="locale='xx_YY' is not one Faker knows"):
        Pseudonymizer(Pseudonym("fake", pii="name", locale="xx_YY"))


# --- the spec ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text, spec", [
    ("pseudonym", Pseudonym()),
    ("pseudonym:fresh", Pseudonym("fresh")),
    ("pseudonym:integer", Pseudonym("integer")),
    ("pseudonym:uuid4", Pseudonym("uuid4")),
    ("pseudonym:pattern:P{:05d}", Pseudonym("pattern", pattern="P{:05d}")),
    ("pseudonym:pattern:pattern=id={:,d}", Pseudonym("pattern", pattern="id={:,d}")),
    ("pseudonym:constant:REDACTED", Pseudonym("constant", value="REDACTED")),
    (f"pseudonym:hmac:key_env={KEY_ENV}", Pseudonym("hmac", key_env=KEY_ENV, length=16)),
    ("pseudonym:hmac:key_file=/run/secrets/ga, length=32",
     Pseudonym("hmac", key_file="/run/secrets/ga", length=32)),
    ("pseudonym:fake:email", Pseudonym("fake", pii="email", locale="en_US")),
    ("pseudonym:fake:name,locale=fr_FR", Pseudonym("fake", pii="name", locale="fr_FR")),
    ("pseudonym:fake:locale=fr_FR,pii=phone", Pseudonym("fake", pii="phone", locale="fr_FR")),
])  # fmt: skip
def test_the_text_form_reads_as_the_spec(text, spec):
    assert Pseudonym.from_text(text) == spec == Pseudonym.of(text) == Pseudonym.of(spec.plain())
    assert pickle.loads(pickle.dumps(spec)) == spec


@pytest.mark.parametrize("given, error", [
    ("pseudonym:sha256", r"strategy='sha256' is not offered: an unkeyed hash is reversed"),
    ("pseudonym:md5", "is not offered"),
    ("pseudonym:scramble", r"strategy='scramble' is not one of \('fresh'"),
    ("pseudonym:uuid4:length=8", r"\['length'\] does not apply to strategy 'uuid4', which "
                                 "takes no option"),
    ("pseudonym:fake:email,length=8", r"\['length'\] does not apply to strategy 'fake', which "
                                      r"takes \['pii', 'locale'\]"),
    ("pseudonym:fake", r"strategy 'fake' needs pii: the type of value to fake, one of "
                       r"\('email'"),
    ("pseudonym:fake:email_address", r"pii='email_address' is not one of"),
    ("pseudonym:fake:email,locale=French", r"locale='French' is not a locale such as en_US"),
    ("pseudonym:pattern", r"strategy 'pattern' needs pattern: a format with one integer field"),
    ("pseudonym:pattern:P", r"pattern='P' must hold exactly one field"),
    ("pseudonym:pattern:{}{}", "must hold exactly one field"),
    ("pseudonym:pattern:{:.2f}", "must hold exactly one field"),
    ("pseudonym:pattern:{:c}", "must hold exactly one field"),
    ("pseudonym:pattern:{n}", "must hold exactly one field"),
    ("pseudonym:pattern:{!r}", "must hold exactly one field"),
    ("pseudonym:pattern:P{", "pattern='P{' is not a format"),
    ("pseudonym:constant", "strategy 'constant' needs value: the value given to every value"),
    (f"pseudonym:hmac:key_env={KEY_ENV},length=4", r"length = 4 is out of range: need 8 <= "
                                                    "length <= 64"),
    (f"pseudonym:hmac:key_env={KEY_ENV},length=long", "length must be an integer"),
    (f"pseudonym:hmac:key_env={KEY_ENV},key_env=X", "key_env is given twice"),
    ("pseudonym:integer:5", "pseudonym:integer takes no option written alone; write "
                            "name=value"),
    ("pseudonym:hmac:5", "needs its secret key from exactly one of key_env"),
    ("pseudonym:scramble:5", r"strategy='scramble' is not one of"),
    ("pseudonym:fake:email,fr_FR", r"pii='email,fr_FR' is not one of"),
    ("identifier:hmac", "does not start with 'pseudonym'"),
    ({"strategy": "hmac", "key_env": KEY_ENV, "lenght": 8}, r"unknown pseudonym option\(s\) "
                                                           r"\['lenght'\]"),
    (3, "expected a Pseudonym, got int"),
])  # fmt: skip
def test_a_wrong_spec_is_named_with_its_fix(given, error):
    with pytest.raises(ga.AvatarError, match=error):
        Pseudonym.of(given)


def test_a_chunk_added_late_or_never_is_refused_without_showing_values():
    pseudonymizer = Pseudonymizer("pseudonym:integer", "code").add(TEXT)
    pseudonymizer.pseudonyms(TEXT)
    with pytest.raises(ga.AvatarError, match="added after pseudonyms were drawn"):
        pseudonymizer.add(TEXT)
    with pytest.raises(ga.AvatarError, match="a value was not added") as e:
        pseudonymizer.pseudonyms(pd.Series(["secret-patient-code"]))
    assert "secret-patient-code" not in str(e.value)


def test_boolean_values_get_their_pseudonyms():
    out = pseudonymize(pd.Series([True, False, None, True], dtype=object), "pseudonym:integer",
                       seed=0)
    assert out[0] == out[3] != out[1] and pd.isna(out[2])
