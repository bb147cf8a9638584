"""Every English word list the reading, ranking and labelling use, in one place.

A few base sets, each one kind of word, and the lists the stages use, built from them:

    GRAMMAR    articles, pronouns, prepositions, conjunctions, auxiliaries: never content
    RESEARCH   what every abstract says about itself: paper, method, propose, use ...
    REPORTING  what a sentence reports: shows, found, new
    INFORMAL   filler people type ('making llms forget copyrighted stuff')
    ASKING     words that frame a request: explain, list, tell, looking, please ...

    STOP             GRAMMAR | RESEARCH | REPORTING | INFORMAL: never a content word
    FRAME            GRAMMAR less QUERY_KEEPS | RESEARCH | ASKING | venue names: left out
                     of the BM25 query
    AGGREGATE_FRAME  what frames a count or comparison rather than its topic
    BOILERPLATE      RESEARCH | what abstracts claim of any result: never a topic's term

The question's scope words (venues, statuses) and the labelling nouns are here too, and
the phrases the question reader looks for ('what about', 'since <year>', 'source code'),
written out by `phrases_of` and matched a token at a time by rag.text.Phrases: one
matcher, where each rule used to be its own regex. A language other than English keeps
its words in its own module (rag/question/translate.py).
"""

from __future__ import annotations

import itertools


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def phrases_of(*slots: str) -> tuple[str, ...]:
    """Every phrase made by one alternative per slot ('|' between them; an empty one
    leaves the slot out): phrases_of("|the", "first|last") -> ('first', 'last', 'the first',
    'the last'). Phrases are matched by rag.text.Phrases (a slot like <year> stands for a
    kind of token there)."""
    choices = [slot.split("|") for slot in slots]
    return tuple(" ".join(p for p in combo if p) for combo in itertools.product(*choices))


# --- base sets ------------------------------------------------------------------------------

PREPOSITIONS = _words(
    """of for in on with via under over using from through between across into at along
    and or the a an as based against without toward towards"""
)
GRAMMAR = PREPOSITIONS | _words(
    """to by than then so but not no also both each such while all some any more most other
    this that these those it its they them their i me my we our you your who whom which
    what why where when how is are was were be been being has have had do does did doing
    done can could should would will may might there one two many much"""
)
RESEARCH = _words(
    """paper papers work works study studies studied approach approaches method methods
    propose proposes proposed use used uses using show find existing about"""
)
REPORTING = _words("shows found new say says")  # what a sentence reports, never its topic
INFORMAL = _words(
    """stuff thing things something anything everything lot lots bunch kinda sorta way ways
    make makes making get gets getting got trick tricks"""
)
ASKING = _words(
    """whats list give tell explain describe define definition meaning mean means stand know
    need want look looking please thanks exist exists kind type types ones anything
    something get say says"""
)
# How a venue may be typed -> the key it is compared under. Catalog spellings pass through
# the same map, so a question's "NeurIPS" finds papers stored as "NIPS" and back.
VENUE_ALIASES = {"neurips": "nips", "neur ips": "nips", "nips": "nips"}
# Venues a question may name although the index holds none of their papers (so "which
# CVPR papers ..." is told that there are none, instead of searching everything).
KNOWN_VENUES = tuple(
    "iclr icml aistats uai corl colm colt acl emnlp naacl cvpr iccv eccv aaai ijcai kdd automl"
    .split()
)  # fmt: skip
# Venue names that are also common words in questions: scope only next to a year.
AMBIGUOUS_VENUES = frozenset({"automl", "colt"})

# --- the lists the stages use ---------------------------------------------------------------

STOP = GRAMMAR | RESEARCH | REPORTING | INFORMAL
# The words of GRAMMAR the BM25 query keeps: prepositions that carry content ('over
# graphs', 'without a decoder'), quantifiers, negation. Dropping them too moved four
# lookups among the 22k abstracts off their gold paper (iclr2026 hit@1 0.883 -> 0.862).
QUERY_KEEPS = _words(
    """as at from into over under via between across against along through toward towards
    without all both each more most such than then while may might my no not two but
    doing done based"""
)
FRAME = (GRAMMAR - QUERY_KEEPS) | RESEARCH | ASKING | _words("iclr icml neurips nips")
# Words that frame a count or a comparison, not its topic: 'how many papers are about X'
# and 'compare the papers on X' search X.
AGGREGATE_FRAME = _words(
    """how many number count counts total compare compared comparison comparing versus vs
    vs. between difference differences table about regarding concerning deal deals
    tackle tackles involve involves build builds improve improves frame variant variants
    extension extensions alternative alternatives kind kinds type types studying
    proposing investigate investigates investigating explore explores exploring examine
    examines examining address addresses addressing tackling dealing involving building
    improving focus focuses focusing"""
)  # the -ing forms: 'number of papers studying the loss landscape' (count-calibration2 k210)
# Words that say how a paper uses a named thing, not what it is about: 'papers that run
# experiments with llama', 'report gsm8k results', 'qwen models' count the papers naming
# the thing (`Assistant.count_topic`; dropped only beside a name).
USAGE_FRAME = _words(
    """run runs ran running experiment experiments result results report reports reported
    reporting evaluate evaluates evaluated evaluating evaluation evaluations test tests
    tested testing model models"""
)
# A topic's last word that only names the kind of thing: abstracts name a field by what
# qualifies it ('recommender systems' papers write 'recommendation algorithms', 'use
# recommendation as a setting'), so a count also weighs the topic without it
# (`Assistant.count_topic`). Not 'models': 'language models' is no topic about 'language'.
GENERIC_HEADS = _words(
    """system systems method methods algorithm algorithms approach approaches technique
    techniques framework frameworks"""
)
# What abstracts say of any result: never a topic's term on its own (rag/aggregate/topics.py).
BOILERPLATE = RESEARCH | _words(
    """propose result results shown novel based demonstrate demonstrates achieve achieves
    achieved significantly experiments experimental extensive state art performance
    outperforms outperform furthermore moreover however code available github com https
    http problem problems algorithm algorithms model models learning data task tasks
    framework provide provides efficient effective general different real world training
    trained learn learned learns apply applied given analysis theoretical empirical
    empirically theory prior previous recent recently better improve improves improved
    improvement important challenge challenges key able ability various number set sets
    way ways make makes leading lead leads setting settings introduce introduces present
    presents develop developed cid et al question questions paradigm strong simple scale
    widely level"""
)
# Words every sentence may capitalise ('The', 'However'): never a name a claim states.
SENTENCE_OPENERS = frozenset(
    w.capitalize()
    for w in GRAMMAR
    | _words(
        """however moreover furthermore additionally overall finally first second third
        although unlike compared specifically paper source sources table figure section
        answer question yes"""
    )
)
# Nouns of method kinds: a label of only these names no contribution ('a novel framework').
METHOD_KINDS = _words(
    """framework approach method algorithm technique model paradigm scheme procedure
    formulation objective strategy system variant solution tool pipeline architecture loss
    methods algorithms approaches models techniques strategies"""
)
# Words a weak model's non-title is made of ('Introduction', 'A novel deep learning model').
NOT_A_TITLE = _words(
    """introduction abstract summary title conclusion conclusions overview background paper
    research study method approach machine learning deep artificial intelligence neural
    network networks model models novel new"""
)
# Words that make a phrase a kind of another thing ('a variant of X'): the X is meant.
KIND_NOUNS = _words("variant version class family extension instance example")
# Status words as typed -> the catalog statuses they stand for ("accepted": every status
# that is not one of REJECTED).
STATUS_WORDS = {
    "oral": "oral",
    "orals": "oral",
    "spotlight": "spotlight",
    "spotlights": "spotlight",
    "poster": "poster",
    "posters": "poster",
    "accepted": "accepted",
    "rejected": "reject",
    "withdrawn": "withdraw",
    "workshop": "workshop",
}
REJECTED = frozenset({"reject", "rejected", "withdraw", "withdrawn", "desk reject", "active"})
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "last": -1, "latter": -1}
# What a number measures: a question naming one asks for a figure ('AltGDA convergence
# rate', 'spo gain on aime 25'); a feature of the intent model (rag/question/intent.py).
FIGURE_NOUNS = _words(
    """fraction percentage percent speedup speedups speed-up accuracy rate rates factor
    improvement reduction gain gains number size sizes scale score ratio overhead
    complexity bound bounds error regret perplexity latency throughput memory cost time
    faster slower higher lower better fewer less"""
)
# Not a thing counted in the abstract's own words: ratios, shares, score points.
NOT_COUNTED = _words("times fold percent percentage points point more less")
# The columns a comparison table may have, and the words in a question that ask for one.
COLUMN_WORDS = {
    "problem": _words(
        "problem problems task tasks goal goals motivation motivations challenge challenges setting"
    ),
    "method": _words(
        "method methods approach approaches technique techniques idea ideas algorithm algorithms "
        "how"
    ),
    "key result": _words(
        """result results finding findings performance speedup speedups speed-up speed-ups
        accuracy gain gains number numbers figure figures"""
    ),
    "data": _words(
        "data dataset datasets benchmark benchmarks experiment experiments evaluation evaluations"
    ),
}
# What a paper is called in a question ('how many works ...').
PAPER_NOUNS = _words(
    "paper papers work works submission submissions article articles study studies"
)
# Plural nouns that ask for several papers ('which methods ...', 'dpo variants').
PLURAL_NOUNS = _words("papers works studies methods approaches articles submissions variants")
SINGULAR_NOUNS = _words("paper work study method approach article submission")  # the same, one
# A count per group ('per year', 'by venue', 'each primary area'): the group nouns -> field.
GROUP_NOUNS = {
    "year": "year",
    "years": "year",
    "venue": "venue",
    "venues": "venue",
    "conference": "venue",
    "conferences": "venue",
    "status": "status",
    "decision": "status",
    "area": "area",
    "areas": "area",
    "track": "area",
    "tracks": "area",
}
GROUP_LEADS = _words("per by each every")

# --- phrases the question reader matches (rag/question/reading.py, with rag.text.Phrases) ---

# What a question is about when it asks what something is: the words before the subject.
DEFINITION_LEADS = phrases_of(
    "|so|and|ok",
    """what's|what is|what are|what was|whats|what does|define|definition of|explain|describe|
    tell me about|how does|how do|meaning of|what do you know about|who is|what kind of <w> is""",
)
# After 'which' / 'what': kinds of thing an answer sentence must name ('which datasets').
ENTITY_NOUNS = _words(
    """dataset datasets benchmark benchmarks model models architecture architectures
    environment environments task tasks baseline baselines language languages metric metrics
    algorithm algorithms procedure procedures optimizer optimizers optimiser optimisers
    setting settings method methods domain domains game games"""
)
# The words of a question that asks for a detail and names no topic of its own ('which
# benchmarks', 'datasets?', 'how many parameters', 'results?'): after an answer it asks
# about that answer's paper (rag/question/followup.py `topicless`). Beside these: the
# entity, figure and problem nouns and the count modifiers ('extra'); 'methods' and
# 'papers' ask of the collection instead.
DETAIL_WORDS = _words(
    """experiment experiments evaluation evaluations hardware parameter parameters params
    gpu gpus data many much fast slow"""
)
# What a question asks of one paper when it asks how it works ('so what's their fix', 'the
# key idea?'): the sentences that say how (rag.answering.extractive `evidence`).
METHOD_NOUNS = _words(
    """approach fix solution idea trick mechanism technique strategy intuition insight recipe
    workaround"""
)
# ... and when it asks what the paper found ('what's the main finding', 'the explanation?'),
# or what it costs ('what's the catch': abstracts state a cost with what they found, 'with
# negligible accuracy loss').
FINDING_NOUNS = _words(
    """finding findings result results takeaway takeaways conclusion conclusions explanation
    lesson lessons contribution contributions catch downside downsides drawback drawbacks
    caveat caveats tradeoff tradeoffs"""
)
# 'which one is fastest': words that rank papers by their results ask for those results.
RANKING_WORDS = _words(
    "fastest quickest best strongest cheapest faster quicker better stronger cheaper"
)
# 'what do they prove': the verbs that ask for a finding after 'what do / does / did'.
FINDING_VERBS = _words("find found show prove conclude observe discover learn demonstrate")
# What may stand beside those nouns in a question that names no topic ('the main finding').
MAIN_WORDS = _words("main key core central overall big biggest primary basic general")
# Verbs after which 'how' asks how a thing is done ('how does it work'), not how much.
HOW_VERBS = _words("does do did is are was were can could")
LEAD_INS = _words("so and ok okay then but")  # words a typed question may open with
# What a 'what / which' question asks about one paper when it asks for the gap it closes
# ('what problem does OFMU solve', 'what is the main challenge'): the sentence naming it.
# Not 'gap' or 'bottleneck', which name concepts too ('the information gap').
PROBLEM_NOUNS = _words(
    """problem problems challenge challenges motivation motivations limitation limitations
    shortcoming shortcomings"""
)
# Nouns an abstract may give a number of for one another: 'how many environments' of
# 'five continuous RL tasks', 'how many models' of 'six LLMs', 'how many layers' of a
# 'three-level' graph (rag.answering.extractive.counts). A noun in no class is matched as
# itself only: 'how many GPUs' is never answered by 'eight tasks'.
COUNTED_KIN = (
    _words("tasks environments domains games benchmarks"),
    _words("models llms networks architectures"),
    _words("layers levels stages tiers"),
    _words("datasets benchmarks corpora"),
    # what a paper says it proposes, faces or tells apart, counted in its own words:
    # 'two complementary strategies', 'two persistent challenges: (1) ... (2) ...'
    _words("stages steps phases"),
    _words("approaches methods strategies techniques variants"),
    _words("algorithms algos metaheuristics heuristics solvers"),
    _words("problems issues challenges difficulties limitations"),
    _words("contributions ideas components"),
    _words("theories hypotheses explanations"),
    _words("parameterizations parametrizations representations formulations"),
)
# 'signsgd or other sign-based optimizers': the words after 'or' that make its left side an
# instance of its right, not a modifier sharing its head noun (rag.question.reading)
INSTANCE_LEADS = _words("other similar related")
# What opens an example clause, and what ends one: "applications such as medical diagnosis and
# autonomous driving" names what a paper is not about (rag.text.without_examples)
EXAMPLE_OPENERS = ("such as", "e.g.", "for example", "for instance", "including")
CLAUSE_ENDS = _words("but which where while whereas yet we thus so although though however")
ENTITY_REACH = 40  # characters after 'which' / 'what' within which its noun is looked for
# A count per group: 'per year', 'by primary area', 'over the years', 'orals vs posters'.
_STATUS_NOUNS = "oral|orals|spotlight|spotlights|poster|posters"
GROUPINGS = {
    **{p: GROUP_NOUNS[p.split()[-1]] for p in phrases_of(
        "|".join(GROUP_LEADS), "|primary|topic", "|".join(GROUP_NOUNS))},
    **dict.fromkeys((*phrases_of("a|over the", "year|years"), "year by year"), "year"),
    **dict.fromkeys(
        phrases_of(_STATUS_NOUNS, "vs|vs.|versus|and|or|against", _STATUS_NOUNS), "status"
    ),
}  # fmt: skip
# Details an abstract record never or rarely holds.
ASKS_AUTHORS = (
    *phrases_of("who", "wrote|authored|are the authors"),
    *phrases_of("author|authors|affiliate|affiliates|affiliated|affiliation|affiliations"),
    "written by",
    *phrases_of(
        "which",
        "university|universities|company|companies|lab|labs|institution|institutions|group",
    ),
)
_OPEN = "open-source|open-sourced|open source|open sourced"
ASKS_CODE = (
    "github",
    "source code",
    "repo",
    "repository",
    "codebase",
    *phrases_of("code", "link|repository|url|base"),
    *phrases_of(f"released|{_OPEN}|public|available", "code"),
    *phrases_of("code", "|is|been", f"released|available|public|{_OPEN}"),
    *phrases_of("where", "is|can i find|can i get", "|the|their", "code"),
    *phrases_of("release|released|releases|publish|published|publishes", "|the|their", "code"),
)
# What a paper's record says rather than its abstract: 'which conference is it from',
# 'what year', 'is it an oral?' -> the field asked (rag/aggregate/conference.py
# `record_answer`, for the papers in focus).
_BEING = "was|is|were|are"
_IT = "it|this|that|they|these|those"
ASKS_RECORD: dict[str, str] = {
    **dict.fromkeys(
        phrases_of("which|what", "conference|conferences|venue|venues|proceedings"), "venue"
    ),
    **dict.fromkeys(
        phrases_of("where", _BEING, _IT, "published|accepted|presented|from"), "venue"
    ),
    **dict.fromkeys(phrases_of("which|what", "year|years"), "year"),
    **dict.fromkeys(
        phrases_of("when", _BEING, _IT, "published|accepted|released|presented|out"), "year"
    ),
    **dict.fromkeys(
        phrases_of(f"{_STATUS_NOUNS}|accepted|rejected|status|decision"), "status"
    ),
}  # fmt: skip
# Words that lean on an earlier turn ('it', 'the second one', 'that paper', '[2]').
_ORDINAL_WORDS = "first|second|third|fourth|fifth|last|latter"
REFERS_BACK = (
    *phrases_of("it|its|they|them|their|theirs|above|same"),
    *phrases_of(
        "this|that|these|those|the|said",
        f"""paper|papers|method|methods|approach|approaches|model|models|work|works|one|ones|
        study|algorithm|framework|technique|author|authors|result|results|experiment|
        experiments|dataset|datasets|evaluation|{_ORDINAL_WORDS}|
        former|above|same""".replace("\n", "").replace(" ", ""),
    ),
    *phrases_of("number|paper|source", "<d>"),
    *phrases_of("of", "these|those"),  # 'which of these has code'
    "[<n>]",
    "tell me more",
)
# Asking for the gist of papers rather than one detail: 'summarize them', 'tl;dr', 'tell
# me more about the second one', 'give me a short overview of the rlhf papers' (Query.wants
# 'overview': what each paper does and what it found). Asked where the request opens the
# question, after nothing but OVERVIEW_LEADS, or closes it ('rlhf papers summary'); 'llms
# that summarize documents' asks for papers on summarizing.
OVERVIEW = (
    *phrases_of("|short|brief|quick|high-level|high level", "summary|summaries|overview|recap"),
    *phrases_of("summarize|summarise|sum up|recap|tldr|tl;dr|tl dr|gist|elaborate|expand on"),
    *phrases_of("tell me|say|explain|go into", "more"),
    *phrases_of("more", "details|detail|info|information"),
    *phrases_of("in", "short|brief|a nutshell"),
    *phrases_of("list|show|show me", "them|these|those|these papers|those papers"),
)
# What a comparison of the papers just shown says besides them: 'compare them', 'compare
# the first two' (how many: SMALL_COUNTS).
COMPARE_SHOWN = _words("compare comparison compared first top last both all")
SMALL_COUNTS = {"two": 2, "three": 3, "four": 4, "five": 5, "both": 2}
OVERVIEW_LEADS = LEAD_INS | _words(
    """can could would will you please pls plz kindly i we want need like give me us a an the
    just now quickly briefly"""
)
# Pronouns that do not point back: "is it possible", "it is known that".
GENERIC_IT = (
    *phrases_of("is it", "possible|true|known|feasible"),
    *phrases_of("it is", "known|possible|common"),
)
# A follow-up after something new: 'what about vision models?', 'and for diffusion?'.
WHAT_ABOUT = (
    *phrases_of("|and|but|ok|so", "what|how", "about"),
    *phrases_of("and", "for|in|on|with"),
)
# Which earlier source a follow-up names: 'the second one' -> 2, '[3]' -> 3 (its slot).
ORDINAL_REFS: dict[str, int | None] = {
    **{p: ORDINALS[p.split()[1]] for p in phrases_of(
        "the", _ORDINAL_WORDS, "|one|paper|method|work|source")},
    "[<n>]": None,
    **dict.fromkeys(phrases_of("paper|source|number", "<d>"), None),
}  # fmt: skip
# What a year is read as: a range, a first year, a last year, or the year itself, with
# how far the named year is from the bound ('after 2020' -> from 2021, 'before 2015' -> to
# 2014). Tried in this order: 'papers in 2017 before 2020' is read as before 2020.
YEAR_PHRASES: dict[str, dict[str, int]] = {
    "range": dict.fromkeys(
        (
            *phrases_of("between|from", "<year>", "and|to", "<year>"),
            *phrases_of("<year>", "-|–|to", "<year>"),
        ),
        0,
    ),
    "min": {
        **dict.fromkeys(phrases_of("since|starting|starting from|starting in", "<year>"), 0),
        "after <year>": 1,
        **dict.fromkeys(
            phrases_of("from|in", "<year>", "onward|onwards|and later|or later|on <end>"), 0
        ),
        **dict.fromkeys(phrases_of("<year>", "and later|or later"), 0),
    },
    "max": {
        **dict.fromkeys(phrases_of("until|up to", "<year>"), 0),
        **dict.fromkeys(phrases_of("before|prior to", "<year>"), -1),
    },
    "year": dict.fromkeys(phrases_of("in|of|from|during", "<year>"), 0),
}
# A year alone is a scope only in a question about papers: 'papers in 2017', not 'the world
# cup in 2014'; a status word only before one of these ('oral papers', 'accepted at').
SCOPE_PAPER_NOUNS = _words(
    """paper papers work works submission submissions article articles presentation
    presentations talk talks track"""
)
STATUS_FOLLOWERS = SCOPE_PAPER_NOUNS | _words("at to in on for about")
STATUS_ALONE = _words("orals spotlights posters")  # a status even with nothing after it
AREA_LEADS = "in the|area|area:|primary area|primary area:"  # an area named as one
AREA_TAILS = "|area|track"
# Left dangling before the end once the scope is cut: 'which papers accepted to ?'.
DANGLING = ("at", "in", "from", "of", "on", "for", "accepted to")
# 'how many [more] GPUs did ...': words before the counted noun, and where it ends.
COUNT_MODIFIERS = _words("more extra additional different distinct separate")
# Nouns that sort what is counted: 'how many kinds of tasks' counts tasks.
COUNT_CLASSIFIERS = _words("kinds kind types type sorts sort classes categories varieties")
NOT_A_COUNTED_WORD = _words(
    """do does did is are was were can could has have had will would should in on for of to
    with by at from per it they the a an and or but than"""
)
WHICH = _words("which what")  # what asks for a thing to be named
COUNTING_WORDS = "how many total count counted number altogether overall"  # nothing counted
# What a question asking for a scope's papers as such says besides its scope: 'how many
# iclr 2026 papers are there', 'list the aistats 2021 papers', 'papers per year'
# (`Query.lists_scope`).
SCOPE_LISTING = (
    _words(
        f"""{COUNTING_WORDS} papers paper works submissions articles list show give all every
    there exist exists indexed index corpus collection database dataset available stored
    loaded accepted in"""
    )
    | GROUP_LEADS
    | GROUP_NOUNS.keys()
)  # 'how many papers per year'
# 'compare X and Y', 'X vs Y'; 'compare the datasets of X and Y'; 'in terms of speed'.
COMPARE_LEADS = phrases_of(
    "|please",
    "compare|comparison of|comparison between|difference between|differences between|contrast",
)
COMPARE_SEPARATORS = _words("and with vs vs. versus to against")
VERSUS = _words("vs vs. versus")
COLUMN_LEADS = ("in terms of", "on their", "by their", "regarding")
SET_DETERMINERS = _words("the all these those")
COLUMN_DETERMINERS = _words(
    "the their"
)  # 'compare the datasets of X and Y'  # 'compare the papers on X': a set
SET_NOUNS = _words("paper papers work works method methods approaches")
# Dropped from the end of a definition's subject: 'what does F2SA-p stand for'.
SUBJECT_TAILS = (
    "do",
    "does",
    "work",
    "mean",
    "stand for",
    "method",
    "approach",
    "algorithm",
    "about",
)
ARTICLES = _words("a an the")
# A descriptive suffix on a name: 'DCT-based' names DCT.
NAME_SUFFIXES = _words("based style like type driven free aware guided")
