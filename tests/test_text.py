"""Text helpers the question stage and the answerability evidence lean on."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.text import (
    content_words,
    forms_of,
    mentions,
    near_word,
    normalise_terms,
    one_edit_apart,
    plain,
    sentence_spans,
    spelled_out,
    split_sentences,
    stem,
    without_examples,
)


@pytest.mark.parametrize(
    ("text", "term", "found"),
    [
        ("the F${}^2$SA-$p$ method", "F2SA-p", True),
        ("LLMs are large", "LLM", True),
        ("a DCT-based projection", "DCT", True),
        ("we demonstrate that", "DeMo", False),  # a word, not a substring
        ("about 90\\% efficacy", "90%", True),
        ("Qwen3-8B and Qwen3-30B", "qwen3", True),
        ("an exact penalty method", "exact penalty", True),
        ("the best 32B baseline", "32", True),  # a number with its unit
        ("online linear CMDPs", "MDP", True),  # an acronym inside a longer one
        ("SGDM and DP-SGD", "SGD", True),
        ("we study 132 cases", "32", False),
        ("we propose ActiveDPO, an algorithm", "DPO", True),  # a name coined on it
        ("we propose NeuCLIP", "CLIP", True),
        ("policy ratio clipping", "CLIP", False),
        ("per-example clipping", "CLIP", False),
        ("the DPOs we compare", "DPO", True),
        ("models like Qwen3-30B", "Qwen", True),  # a name with its version number
        ("on LLaMA-3.1-8B", "llama", True),
        ("the Qwenish model", "Qwen", False),
    ],
)
def test_mentions_a_term_as_a_word(text: str, term: str, found: bool) -> None:
    assert mentions(text, term) is found


def test_plain_drops_latex_glue_only() -> None:
    assert plain("F${}^2$SA-$p$ at 7.4\\% in $O(n)$") == "F2SA-p at 7.4% in O(n)"
    assert plain("no maths here") == "no maths here"


def test_spelled_out_acronyms() -> None:
    text = (
        "We use the discrete cosine transform (DCT) with large language models (LLMs) and "
        "the alternating gradient descent-ascent (AltGDA) algorithm; a table (see A)."
    )
    assert spelled_out(text) == {
        "DCT": "discrete cosine transform",
        "LLM": "large language models",
        "AltGDA": "alternating gradient descent-ascent",
    }


@pytest.mark.parametrize(
    ("a", "b", "near"),
    [
        ("unlearing", "unlearning", True),
        ("speculatve", "speculative", True),
        ("tranformer", "transformer", True),
        ("reinforcment", "reinforcement", True),
        ("unlearn", "unlearning", False),
        ("abcdef", "abcxyz", False),
    ],
)
def test_one_edit_apart(a: str, b: str, near: bool) -> None:
    assert one_edit_apart(a, b) is near and one_edit_apart(b, a) is near


@given(st.text(alphabet="abcdefg", min_size=1, max_size=12))
def test_a_word_is_one_edit_from_itself_with_one_letter_dropped(word: str) -> None:
    assert one_edit_apart(word, word)
    assert one_edit_apart(word, word[1:]) and one_edit_apart(word[:-1], word)


def test_only_a_word_english_lacks_may_be_a_typo() -> None:
    assert near_word("unlearing", frozenset({"unlearning", "machine"})) == "unlearning"
    assert near_word("splatting", frozenset({"splitting"})) is None  # a real word
    assert near_word("llms", frozenset({"llm"})) is None  # too short to tell


@given(
    st.lists(
        st.sampled_from(["We do X.", "It works, e.g. on Y.", "Done!", "See [2] Next", "a"]),
        max_size=8,
    ),
    st.sampled_from([" ", "  ", "\n"]),
)
def test_sentence_spans_cut_where_split_sentences_does(parts: list[str], gap: str) -> None:
    text = f" {gap.join(parts)} "
    spans = sentence_spans(text)
    assert [" ".join(text[s:e].split()) for s, e in spans] == split_sentences(
        " ".join(text.split())
    )
    assert all(text[s:e] == text[s:e].strip() for s, e in spans)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))


def test_a_name_coined_on_an_acronym_also_holds_it_as_a_word() -> None:
    assert normalise_terms("we propose ActiveDPO and ConNAS") == (
        "we propose ActiveDPO DPO and ConNAS NAS"
    )
    assert "dpo" in content_words("ActiveDPO outperforms existing methods")
    # two capitals are no acronym to split off ('LoRA', 'OpenAI'); caps alone stay whole
    assert (
        normalise_terms("LoRA, BoRA, OpenAI, DeMo and CSAM") == "LoRA, BoRA, OpenAI, DeMo and CSAM"
    )


def test_forms_of_a_word_are_the_texts_words_sharing_its_stem() -> None:
    text = "We train on eight A100 GPUs; one GPU-hour each. Queries and one query."
    assert forms_of(text, "GPU") == ["GPUs", "GPU"]  # 'GPU-hour' read by its parts
    assert forms_of(text, "queries") == ["Queries", "query"]
    assert forms_of(text, "TPUs") == []
    assert stem("LLMs") == stem("LLM") == "llm" and stem("studies") == stem("study")


def test_an_acronym_plural_typed_in_lower_case_meets_the_written_one() -> None:
    from rag.answering.extractive import counts
    from rag.text import content_words, stem

    assert content_words("how many llms and gpus") >= {"llm", "gpu"}
    assert content_words("six LLMs on GPUs") >= {"llm", "gpu"}
    assert stem("sdes") == stem("SDEs") == "sde"
    assert content_words("bias class loss process") == {"bias", "class", "loss", "process"}
    assert counts("Extensive experiments across six LLMs and three datasets", "llms")


def test_a_prefix_written_with_or_without_its_hyphen_is_one_word() -> None:
    """'bilevel' meets 'bi-level' and 'over-parameterized' meets 'overparameterized', in
    both directions; a hyphen that joins two words ('speculative-decoding') stays."""
    assert normalise_terms("a bi-level, non-convex task") == (
        "a bi-level bilevel, non-convex nonconvex task"
    )
    assert content_words("bilevel") <= content_words("a penalty-based bi-level framework")
    assert content_words("over-parameterized") & content_words("overparameterized KANs")
    assert normalise_terms("speculative-decoding re-do") == "speculative-decoding re-do"


def test_an_acronym_ending_in_a_capital_s_meets_it_typed_in_lower_case() -> None:
    """A typed 'jtfs' reads as a plural ('jtf', as 'gpus' -> 'gpu'); the abstract's 'JTFS'
    holds that form too, so the two meet."""
    assert content_words("jtfs") <= content_words("the scattering transform (JTFS)")
    assert content_words("gpus") <= content_words("eight GPUs")
    assert normalise_terms("JTFS and NAS") == "JTFS JTF and NAS NA"


def test_a_name_with_its_version_run_on_meets_the_name_typed_alone() -> None:
    """'which papers use qwen' meets 'Qwen3-8B' and 'Qwen2.5-7B'; 'ResNet50' meets
    'resnet'; a hyphen already split 'LLaMA-3'; lower-case words and short heads stay."""
    assert {"qwen"} <= content_words("Experiments using Qwen3-8B and Qwen2.5-7B")
    assert normalise_terms("ResNet50 on CIFAR10.") == "ResNet50 ResNet on CIFAR10 CIFAR."
    assert normalise_terms("LLaMA-3 on maj@32, O2NC, A100") == "LLaMA-3 on maj@32, O2NC, A100"
    assert "qwen" not in content_words("qwen3 runs")  # typed with its version: as typed


@pytest.mark.parametrize(
    ("sentence", "left"),
    [
        (
            "Networks are used in safety-critical applications such as medical diagnosis and "
            "autonomous driving.",
            "Networks are used in safety-critical applications ",
        ),
        (
            "We evaluate on benchmarks including ImageNet-1K for classification and COCO.",
            "We evaluate on benchmarks ",
        ),
        # the clause ends at a parenthesis, a semicolon or a comma before a new clause
        ("Tasks (e.g., detection and segmentation) improve.", "Tasks () improve."),
        (
            "in many domains, for example robotics and games; we study one",
            "in many domains, ; we study one",
        ),
        (
            "used for tasks such as retrieval and ranking, but they are brittle",
            "used for tasks , but they are brittle",
        ),
        # no example: the sentence is left as it is
        (
            "We propose a planner for autonomous driving.",
            "We propose a planner for autonomous driving.",
        ),
        ("Results include no such claim.", "Results include no such claim."),
    ],
)
def test_example_clauses_are_left_out(sentence: str, left: str) -> None:
    assert without_examples(sentence) == left
