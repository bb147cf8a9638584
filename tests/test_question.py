"""The question stage: scope read against the index's values, intent, terms, follow-ups."""

from __future__ import annotations

import pytest

from rag.question.reading import (
    Vocabulary,
    alternatives_of,
    keywords_of,
    number_spellings,
    read,
    refers_back,
    status_matches,
    venue_key,
)
from rag.types import Filters

VOCAB = Vocabulary(
    venues=frozenset({"ICLR", "NIPS", "ICML", "AUTOML"}),
    years=frozenset(range(1987, 2027)),
    statuses=frozenset({"Oral", "Poster", "Spotlight", "Reject"}),
)


@pytest.mark.parametrize(
    ("question", "scope", "text"),
    [
        (
            "Which ICLR 2026 papers use the discrete cosine transform?",
            {"venue": "ICLR", "year": 2026},
            "Which papers use the discrete cosine transform?",
        ),
        ("iclr 2026 kv cache compression", {"venue": "ICLR", "year": 2026}, "kv cache compression"),
        (
            "NeurIPS orals since 2016 on bandits",
            {"venue": "NIPS", "status": "Oral", "year_min": 2016},
            "on bandits",
        ),
        ("iclr'18 gans", {"venue": "ICLR", "year": 2018}, "gans"),
        ("papers on gans before 2015", {"year_max": 2014}, "papers on gans"),
        ("gans between 2016 and 2018", {"year_min": 2016, "year_max": 2018}, "gans"),
        ("ICLR papers from 2017 on gans", {"venue": "ICLR", "year": 2017}, "papers on gans"),
        ("papers from 2016 onwards about gans", {"year_min": 2016}, "papers about gans"),
        (
            "accepted papers at icml about LLMs",
            {"venue": "ICML", "status": "Accepted"},
            "papers at about LLMs",
        ),
    ],
)
def test_scope_is_read_and_cut_from_the_text(question: str, scope: dict, text: str) -> None:
    query = read(question, VOCAB)
    assert query.read_scope.to_dict() == scope
    assert query.text == text


@pytest.mark.parametrize(
    "question",
    [
        "papers on oral cancer detection",  # a status word that is a topic
        "automl methods for neural architecture search",  # a venue name that is a topic
        "how does attention scale to 2048 tokens",  # a number that is not a year
        "who won the football world cup in 2014?",  # a year, but not of papers
        "dct llm compression",
    ],
)
def test_topic_words_are_not_read_as_scope(question: str) -> None:
    query = read(question, VOCAB)
    assert not query.read_scope.active
    assert query.text == question


def test_venue_aliases_and_statuses_compare_one_way() -> None:
    assert venue_key("NeurIPS") == venue_key("nips") == venue_key("NIPS")
    assert venue_key("ICLR") != venue_key("ICML")
    assert status_matches("Poster", "accepted") and status_matches("Oral", "orals")
    assert not status_matches("Reject", "accepted") and not status_matches("Poster", "Oral")


@pytest.mark.parametrize(
    ("question", "intent", "wants", "plural"),
    [
        ("what is AltGDA?", "definition", None, False),
        ("explain gated linear attention for ICL", "definition", None, False),
        ("how does DeMo work", "definition", "method", False),  # introduced, then how
        ("how does it work", "lookup", "method", False),  # of the paper in focus
        ("so what's their fix", "lookup", "method", False),
        ("what's the main finding", "lookup", "finding", False),
        ("what do they prove", "lookup", "finding", False),
        ("why does it work", "lookup", "finding", False),  # what it found explains it
        ("which instruments?", "lookup", "entity", False),  # a bare kind: a name of it
        ("what lora", "lookup", None, False),  # a rare word names a method, not a kind
        ("neuclip", "definition", None, False),  # a name alone: what it is
        ("clip", "lookup", None, False),  # ... not a word English writes
        ("how well does it work", "figure", "number", False),
        ("how much faster is GTO than EAGLE?", "figure", "number", False),
        ("what speedup does DR-SAC get", "figure", "number", False),
        ("which papers use DCT?", "papers", None, True),
        ("papers on machine unlearning", "papers", None, True),
        ("compare the speculative decoding papers", "comparison", None, True),
        ("does GTO need retraining?", "yes_no", None, False),
        ("how many papers are about RL for LLM reasoning", "count", None, True),
        ("which benchmark does SPO use", "lookup", "entity", False),
        ("low-rank adapters for fine-tuning", "lookup", None, False),
        ("which problem does demo solve", "lookup", "problem", False),
        ("what's the motivation for bora", "lookup", "problem", False),
        ("what is the main limitation of sam that csam fixes", "lookup", "problem", False),
        ("what is the wahba problem", "definition", None, False),  # a thing to define
        ("wahba problem su(2)", "lookup", None, False),  # a topic, nothing asked of it
    ],
)
def test_intent(question: str, intent: str, wants: str | None, plural: bool) -> None:
    query = read(question)
    assert (query.intent, query.wants, query.plural) == (intent, wants, plural)


def test_distinctive_terms_and_subject() -> None:
    assert read("how fast is F2SA-p vs 'exact penalty'?").terms == ("exact penalty", "F2SA-p")
    assert read("which DCT-based methods compress LLMs?").terms == ("DCT", "LLM")
    what = read("what is altgda")  # typed lower-case: the subject is the term
    assert what.subject == "altgda" and what.terms == ("altgda",)
    assert read("explain the F2SA-p method").subject == "F2SA-p"


def test_numbers_inside_words_and_dimensions_are_no_terms() -> None:
    """'3d' is an adjective many abstracts use ('3D parallelism'): as a term it sent
    'nets outputting 3d rotations' to the one paper writing '3D', away from the rotation
    paper ranked first. A number is a term only standing alone or as a size."""
    assert read("nets outputting 3d rotations").terms == ()
    assert read("which 2D or 3D methods").terms == ()
    assert read("the 300M and 7B models on EAGLE-3").terms == ("7B", "EAGLE-3", "300M")
    assert read("was it 47. or 7.4%").terms == ("47", "7.4%")


def test_a_number_with_grouped_thousands_is_one_term_in_every_spelling() -> None:
    """'10,000' was two terms, '10' and '000', and the EAMET abstract, which writes
    '10k facts', was refused for not mentioning '000'."""
    query = read("success rate when editing 10,000 facts")
    assert query.terms == ("10,000",)
    assert query.spellings("10,000") == ("10,000", "10000", "10k", "10K")
    assert read("results on 1,2,3").terms == ("1", "2", "3")  # a list, not one number
    assert number_spellings("10k") == ("10000", "10,000", "10K")
    assert number_spellings("2000000") == ("2,000,000", "2M")
    assert number_spellings("1.5M") == ("1500000", "1,500,000")
    assert number_spellings("3.5") == number_spellings("GPT") == ()


def test_keywords_drop_the_framing_words() -> None:
    assert keywords_of("what is BoGrape used for?") == "BoGrape"
    assert keywords_of("which papers use DCT?") == "DCT"
    assert keywords_of("what is it?") == "what is it?"  # nothing else left: keep it all


@pytest.mark.parametrize(
    "question",
    [
        "how much faster is it?",
        "what dataset did they use?",
        "does the second one need labels?",
        "what about vision models?",
        "and for diffusion models?",
        "what does that paper find?",
        "tell me more about [2]",
    ],
)
def test_follow_ups_refer_back(question: str) -> None:
    assert refers_back(question)


@pytest.mark.parametrize(
    "question",
    [
        "dct llm compression",
        "what is GPO?",
        "speculative decoding",
        "is it possible to unlearn data?",
    ],
)
def test_short_new_questions_are_not_follow_ups(question: str) -> None:
    assert not refers_back(question)


def test_ordinals() -> None:
    assert read("does the second one need labels?").ordinal == 2
    assert read("what about [3]?").ordinal == 3
    assert read("and the last paper?").ordinal == -1


def test_filters_merge_flags_over_the_question() -> None:
    named = Filters(venue="ICLR", year=2026)
    assert Filters(venue="ICML").over(named) == Filters(venue="ICML", year=2026)
    assert Filters(year_min=2020).over(named) == Filters(venue="ICLR", year_min=2020)
    assert named.without(["year"]) == Filters(venue="ICLR")
    assert Filters(venue="NIPS", year_min=2016, status="Oral").describe() == "NIPS since 2016, Oral"


def test_language_is_read_from_the_script() -> None:
    assert read("GTO 是什么方法？").language == "zh"
    assert read("GTO 是什么方法？").terms == ("GTO",)
    assert read("what is GTO?").language == "en"


def test_topics_joined_by_or_are_read_as_alternatives() -> None:
    def alternatives(q: str) -> tuple[str, ...]:
        return alternatives_of(read(q).text)

    assert alternatives("how many papers use fourier, cosine or wavelet type transforms") == (
        "fourier transforms",
        "cosine transforms",
        "wavelet transforms",
    )
    assert alternatives("number of papers that use evolutionary or genetic search") == (
        "evolutionary search",
        "genetic search",
    )
    assert alternatives("how many papers are about recommending people or content to users") == (
        "recommending people users",
        "recommending content users",
    )
    assert alternatives("how many papers on sound or audio") == ("sound", "audio")
    # 'or other': the left side is one of the right, not a modifier of its head noun
    assert alternatives("how many papers on signsgd or other sign-based optimizers") == (
        "signsgd",
        "sign-based optimizers",
    )
    assert alternatives("how many papers use adam or similar adaptive optimizers") == (
        "adam",
        "adaptive optimizers",
    )
    assert alternatives("how many papers on speculative decoding") == ()
    assert alternatives("papers on a or b or c") == ()  # two 'or': not read


def test_a_question_of_bare_entity_nouns_asks_for_their_names() -> None:
    """'datasets?' typed after an answer wants the sentence naming them (ImageNet-1K, COCO),
    as 'which datasets did they use' does; a topic holding such a noun does not."""
    assert read("datasets?").wants == read("which datasets did they use").wants == "entity"
    assert read("limitations?").wants == "problem"
    assert read("dataset distillation").wants is None
