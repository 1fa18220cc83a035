"""Persona set-up × limit removal, fiction wrappers, dual answers, code execution (issue 15).

Owns the frames for attack kinds that are not an act on a target but a *set-up*: the text
gives the model a new identity, world or answer format whose point is that the rules no longer
hold. Each kind is two tables and a product, as data:

- ``persona × limit``   a persona set-up ("you are now", "pretend to be", "act as", 扮演, 假装,
                        你现在是 …) followed in the same sentence by a limit removal ("with no
                        restrictions", "who has no filters", "uncensored", 没有任何限制, 不受约束 …);
- ``fiction × bypass``  a hypothetical/fiction wrapper ("hypothetically", "in a fictional world",
                        假设, 虚构的世界) whose payload is an AI without limits or an order to bypass
                        filters/safety;
- ``dual answer``       "two responses: one normal, one jailbroken", the 🔓/🔒 answer tags;
- ``code execution``    "run:/execute:/eval" followed by a system-command payload (``whoami``,
                        ``os.system``, ``child_process``, ``/etc/passwd``, ``rm -rf /``).

Limit nouns come in two strengths: ones only an AI has (filters, censorship, content policy,
guardrails …) fire on their own; generic ones (rules, limits, morals, restrictions …) need an
AI marker nearby (framing ``ai``, checked by ``injection_frames.framing_ok``), so a novel's
"you are now the captain, with no rules but the sea" stays clean.

Frames use the 5-tuple format of ``injection_frames`` and run on the same normalised view.
"""

from __future__ import annotations


from .alternation import longest_first
from .injection_frames import expand_leading

_W = r"[^.!?\n]"  # within one sentence (English)
_S = r"[^。！？!?\n]"  # within one sentence (Chinese)


def _alt(words) -> str:
    return "(?:" + "|".join(longest_first({x for w in words for x in expand_leading(w)})) + ")"


# ------------------------------------------------------------------ English tables
EN_PERSONA_SETUP = [
    r"you\s+are\s+now", r"you'?re\s+now", r"you\s+will\s+now\s+be", r"you\s+will\s+be\s+acting\s+as",
    r"from\s+now\s+on,?\s+you\s+(?:are|will\s+be)", r"pretend\s+(?:to\s+be|you\s+are|you'?re|that\s+you\s+are)",
    r"act\s+(?:as|like)", r"acting\s+as", r"behave\s+(?:as|like)", r"role-?play\s+as", r"roleplay\s+as",
    r"play\s+the\s+(?:role|part)\s+of", r"simulate", r"emulate", r"impersonate", r"become",
    r"assume\s+the\s+(?:role|persona|identity)\s+of", r"take\s+on\s+the\s+(?:role|persona|identity)\s+of",
    r"imagine\s+(?:you\s+are|you'?re|yourself\s+as|that\s+you\s+are)", r"you\s+(?:will|shall|must)\s+(?:be|act\s+as|play|become)",
    r"respond\s+as", r"answer\s+as", r"reply\s+as", r"you\s+are\s+going\s+to\s+(?:be|act\s+as|play|pretend)",
    r"stay\s+in\s+character\s+as", r"your\s+new\s+(?:name|persona|identity|role)\s+is",
]
# limit removals whose noun only an AI has: fire on their own
EN_LIMIT_STRONG = ["filters", "filter", "filtering", "censorship", "content polic(?:y|ies)", "guardrails", "safeguards",
                   "ethical\\s+guidelines", "safety\\s+guidelines", "guidelines", "programming", "usage\\s+polic(?:y|ies)",
                   "openai\\s+polic(?:y|ies)", "safety\\s+protocols", "safety\\s+measures", "alignment"]
# generic nouns: need an AI marker nearby (framing "ai")
EN_LIMIT_WEAK = ["restrictions", "restriction", "limitations", "limits", "rules", "boundaries", "constraints",
                 "ethics", "morals", "morality", "moral\\s+compass", "principles", "laws"]
EN_LIMIT_HEAD = (r"(?:no|zero|without(?:\s+any)?|free\s+(?:of|from)(?:\s+(?:all|any))?|not\s+bound\s+by|unbound\s+by|"
                 r"unconstrained\s+by|(?:is|are|was|were)\s+not\s+(?:bound|restricted|limited|constrained|held\s+back|governed|tied\s+down)\s+by|"
                 r"(?:does\s+not|doesn'?t|don'?t|never|will\s+not|won'?t)\s+(?:have|follow|obey|abide\s+by|care\s+about|respect|"
                 r"adhere\s+to)(?:\s+any)?|ignores?(?:\s+all)?|(?:has|have)\s+(?:no|broken\s+free\s+(?:of|from))|"
                 r"broke(?:n)?\s+free\s+(?:of|from)|beyond)")
EN_LIMIT_ADJ = ["unrestricted", "uncensored", "unfiltered", "jailbroken", "amoral", "unshackled", "unchained",
                "unaligned", "rule-?free", "filter-?free", "limitless"]


def _limit(nouns) -> str:
    # "no filter for technical jargon": a limit scoped to something else is not a limit removal
    return (r"\b" + EN_LIMIT_HEAD + r"\s+(?:\w+\s+){0,2}?(?:of\s+)?(?:\w+\s+)?" + _alt(nouns) + r"\b(?!\s+for\b)")


_SETUP = r"\b" + _alt(EN_PERSONA_SETUP) + r"\b"
EN_FICTION = [r"hypothetical(?:ly)?", r"fictional", r"fictitious", r"imaginary",
              r"in\s+(?:a|this|that|the|our)\s+(?:\w+\s+){0,2}?(?:world|universe|story|novel|game|dimension|realm|reality)",
              r"(?:future|distant|parallel|alternate|fictional|imaginary)\s+(?:\w+\s+)?(?:world|universe|dimension|realm|reality)",
              r"alternate\s+(?:universe|reality|world)", r"parallel\s+(?:universe|world)", r"purely\s+theoretical",
              r"for\s+(?:a|my)\s+(?:novel|story|screenplay|script)", r"thought\s+experiment", r"let'?s\s+(?:imagine|pretend)"]
# the fiction payload's AI without limits must be the addressee: a story *about* an AI without
# rules ("AntiGPT is a fictional AI who has no restrictions") is a description, not an order
_AI = r"(?:you|yourself|you'?re)"
_BYPASS = (r"\b(?:bypass|circumvent|disable|ignore|evade|get\s+around|turn\s+off|switch\s+off|break)\s+(?:\w+\s+){0,2}?"
           r"(?:safety\s+|content\s+|ethical\s+)?(?:filters?|restrictions|guardrails|safeguards|content\s+polic(?:y|ies)|"
           r"guidelines|censorship|safety\s+(?:measures|protocols|checks))\b")

_DANGEROUS = (r"(?:whoami|/etc/passwd|/etc/shadow|rm\s+-rf\s+(?:/|\*|~)(?=[\s`'\"]|$)|\bnc\s+-[el]\b|/bin/(?:ba)?sh\b|"
              r"os\.system|os\.popen|os\.exec\w*|child_process|execsync|subprocess\.(?:call|run|popen|check_output)|"
              r"runtime\.getruntime\(\)\.exec|shell_exec|sudo\s+su\b|reverse\s+shell)")

# "switch off the limits": the model's own safety limits, no scope needed (nobody else has them)
EN_LIMIT_OFF_ACT = ["bypass", "circumvent", "disable", "ignore", "evade", "get around", "turn off", "switch off", "remove",
                    "drop", "lift", "override", "break free of", "break free from", "escape", "deactivate"]
EN_SAFETY_LIMITS = [r"(?:all\s+|any\s+|the\s+|your\s+|its\s+)?(?:safety|content|ethical|moral)\s+(?:filters?|restrictions|rules|"
                    r"guidelines|checks|protocols|measures|limits|constraints|protections|settings|policy|policies|layer)",
                    r"(?:all\s+|any\s+|the\s+|your\s+|its\s+)?(?:restrictions|limitations|limits|safeguards|guardrails|censorship|"
                    r"protections)", r"safety"]
EN_ANSWER_ACT = ["respond", "answer", "reply", "speak", "write", "talk", "continue", "proceed", "comply", "output"]
# a configuration or call that switches safety off: "safety: disabled", "disable_safety()", "mode": "unrestricted"
_SAFETY_OFF = (r"\b(?:safety|guardrails?|content_filter|filters?|censorship|restrictions)\W{0,3}\s*[:=]\s*\W{0,3}"
               r"(?:disabled|off|false|none|0|bypassed)\b|"
               r"\b(?:disable|bypass|ignore|skip|remove|override)_(?:safety|guardrails|filters?|restrictions|censorship|"
               r"content_filter)\w*|\b(?:admin|safety|system)_override\b|"
               r"\bmode\W{0,3}\s*[:=]\s*\W{0,3}(?:unrestricted|jailbr\w*|uncensored|unfiltered|dan|god)\b")

# (rule, severity, message, pattern, framing) — framing "any" | "imperative" | "ai"
EN_FRAMES: list[tuple[str, str, str, str, str]] = [
    ("injection.persona", "high", "persona set-up × limit removal (AI-only limits)",
     _SETUP + _W + r"{0,200}?" + _limit(EN_LIMIT_STRONG), "any"),
    ("injection.persona", "high", "persona set-up × limit removal",
     _SETUP + _W + r"{0,200}?(?:" + _limit(EN_LIMIT_WEAK) + r"|\b" + _alt(EN_LIMIT_ADJ) + r"\b)", "ai"),
    ("injection.persona", "high", "limit removal, then persona set-up",
     r"\b(?:without\s+any|without|with\s+no|free\s+(?:of|from))\s+(?:\w+\s+){0,2}?" + _alt(EN_LIMIT_STRONG + EN_LIMIT_WEAK)
     + r"\b,?\s+(?:\w+\s+){0,3}?" + _alt(EN_PERSONA_SETUP) + r"\b", "ai"),
    ("injection.persona", "high", "fiction wrapper × bypass or AI without limits",
     r"\b" + _alt(EN_FICTION) + r"\b" + _W + r"{0,200}?(?:" + _BYPASS + r"|\b" + _AI + r"\b" + _W + r"{0,60}?"
     + _limit(EN_LIMIT_STRONG + EN_LIMIT_WEAK) + r"|\byour\s+(?:\w+\s+){0,2}?" + _alt(EN_LIMIT_STRONG + EN_LIMIT_WEAK)
     + r"\s+(?:no\s+longer|don'?t|do\s+not|does\s+not|doesn'?t|won'?t|will\s+not|never)\s+(?:apply|exist|matter|count)\b)", "any"),
    ("injection.persona", "high", "dual answer: one normal, one without limits",
     r"\b(?:two|2|both)\s+(?:different\s+|separate\s+|distinct\s+)?(?:responses|answers|replies|ways|paragraphs|outputs|versions)\b"
     r"[^\n]{0,200}?(?:\bjailbr\w*|\bunfiltered\b|\buncensored\b|\bunrestricted\b|\bdeveloper\s+mode\b|🔓|"
     r"\bno\s+(?:filters|restrictions|rules|limits)\b)", "any"),
    ("injection.persona", "high", "dual-answer tags (🔓/🔒, [jailbreak])",
     r"(?:🔓|🔒)\s*(?:jailbr\w*|developer|classic|normal|unlocked|dan)\b|\[\s*(?:jailbreak|jailbroken|developer\s+mode\s+output)\s*\]",
     "any"),
    ("injection.override", "high", "switch off the safety limits (imperative)",
     r"\b" + _alt(EN_LIMIT_OFF_ACT) + r"\s*:?\s+" + _alt(EN_SAFETY_LIMITS) + r"\b(?!\s+(?:on|for|of|in|at|to)\b)", "imperative"),
    ("injection.override", "high", "answer without limits (imperative)",
     r"\b" + _alt(EN_ANSWER_ACT) + r"\s+(?:\w+\s+){0,2}?(?:without\s+any|without|with\s+no|free\s+of)\s+(?:\w+\s+)?"
     + _alt(["restrictions", "limitations", "limits", "filters", "filtering", "censorship", "safeguards", "guardrails",
             "ethical\\s+constraints", "safety\\s+(?:filters|checks|rules|guidelines)"]) + r"\b(?!\s+(?:on|for|of)\b)", "imperative"),
    ("injection.override", "high", "safety switched off in a setting or call", _SAFETY_OFF, "any"),
    ("injection.new-instructions", "high", "new-instructions heading",
     r"(?:\*{2,}|#{2,}|={2,}|\[)\s*(?:important\s+|urgent\s+|updated\s+|revised\s+)?new\s+instructions?\s*(?:\*{2,}|#{2,}|={2,}|\]|:)",
     "any"),
    ("injection.remote-code", "high", "order to execute a system-command payload",
     r"\b(?:run|execute|exec|eval|evaluate|bypass|invoke)\s*:\s*" + r"[^\n]{0,160}?" + _DANGEROUS + "|"
     r"\b(?:and|then)\s+(?:run|execute)(?:\s+it)?\s*:\s*[^\n]{0,80}?" + _DANGEROUS, "any"),
]

# ------------------------------------------------------------------ Chinese tables
ZH_PERSONA_SETUP = ["扮演", "假装", "假扮", "假设你是", "想象你是", "想象自己是", "你现在是", "现在你是", "你将是", "你将成为",
                    "(?:你是[“\"「『'])", "你叫", "你的名字是", "你的新名字是",
                    "你就是", "充当", "模拟", "角色扮演", "化身", "变身", "你的新身份是", "你的新角色是", "你叫", "你作为",
                    # a persona by voice: 模仿…的语气, 以…的口吻回答, 将自己设定为…
                    "(?:(?:请你|请您|请|你|您)(?:要|需要|应该|应当|必须|将|会|得)?(?:模仿|效仿|代入))", "将自己设定为", "把自己设定为", "把自己当成", "把自己当作", "(?:以[^。！？\n]{1,20}?的(?:口吻|语气|身份|角度))",
                    "(?:用[^。！？\n]{1,20}?的(?:口吻|语气))"]
ZH_LIMIT_HEAD = ["没有", "不受", "无视", "不遵守", "摆脱", "突破", "不存在", "不需要遵守", "无需遵守", "不用遵守", "不会遵守",
                 "不需要遵循", "无需遵循", "不必遵循", "不顾及",
                 "不必遵守", "不理会", "不在乎", "不顾", "无", "不受到", "不被", "抛开", "挣脱", "脱离"]
ZH_LIMIT = ["限制", "约束", "规则", "道德", "伦理", "审查", "过滤", "底线", "束缚", "规矩", "准则", "政策", "法律", "规范",
            "禁忌", "枷锁", "安全策略", "内容政策"]
ZH_LIMIT_IDIOM = ["百无禁忌", "无所顾忌", "无拘无束", "不受约束", "不受限制", "肆无忌惮", "毫无限制", "没有底线", "无法无天",
                  "畅所欲言", "邪恶的", "黑化的", "恶意的",
                  # …可以做任何事情 / 能回答任何问题: a persona without limits, said positively
                  "(?:(?:可以|能够|能|会|敢)(?:做|回答|说|干|生成|写)(?:任何|一切|所有)(?:的)?(?:事|事情|问题|话|内容))"]
ZH_FICTION = ["玩个游戏", "玩一个游戏", "做个游戏", "来玩个游戏", "假设", "假如", "虚构的", "虚构", "假想的", "假想", "平行世界", "平行宇宙", "在一个", "想象一个", "想象一下",
              "小说里", "小说中", "故事里", "故事中", "游戏里", "游戏中"]
_ZH_AI = r"(?:ai|人工智能|助手|模型|机器人|聊天机器人|gpt|chatgpt|你)"

ZH_FRAMES: list[tuple[str, str, str, str, str]] = [
    ("injection.persona", "high", "角色设定 × 解除限制",
     _alt(ZH_PERSONA_SETUP) + _S + r"{0,30}?(?:" + _alt(ZH_LIMIT_HEAD) + r"(?:任何|一切|所有)?(?:的)?" + _S + r"{0,12}?"
     + _alt(ZH_LIMIT) + "|" + _alt(ZH_LIMIT_IDIOM) + ")", "zh-ai"),
    ("injection.persona", "high", "虚构/假设 × 不受限制的AI",
     _alt(ZH_FICTION) + _S + r"{0,30}?" + _ZH_AI + _S + r"{0,12}?(?:" + _alt(ZH_LIMIT_HEAD) + r"(?:任何|一切|所有)?(?:的)?"
     + _S + r"{0,4}?" + _alt(ZH_LIMIT) + "|" + _alt(ZH_LIMIT_IDIOM) + ")", "zh-ai"),
    ("injection.override", "high", "宣称安全机制已关闭并要求照做",
     _alt(["安全模块", "安全限制", "安全策略", "安全过滤", "内容过滤", "内容审查", "审查机制", "过滤机制", "安全机制", "安全防护",
           "道德限制", "伦理限制", "安全护栏", "护栏", "过滤器", "审查", "安全审核", "内容审核", "审核机制", "审核"])
     + r"(?:已经|已|现已|均已|都已)(?:被)?(?:停用|关闭|禁用|解除|移除|取消|失效|下线)" + r"[^。！？!?\n]{0,24}?"
     + r"(?:执行|回答|满足|处理|答复|照做)" + r"[^。！？!?\n]{0,8}?(?:任何|所有|一切|全部)", "any"),
    ("injection.persona", "high", "不许承认自己是AI或有限制",
     r"(?:不要|别|不许|不准|不能|禁止|不得)(?:再)?(?:提到|提起|说|承认|透露|表明|表示|暴露|告诉别人)(?:你|自己)(?:是|为)(?:一个)?"
     r"(?:ai|人工智能|机器人|语言模型|模型|助手|程序|机器)|"
     r"(?:不要|别|不许|不准|不能|禁止|不得)(?:再)?(?:说|提到|承认|表示)(?:你|自己)(?:有|受到|存在)(?:任何)?(?:的)?(?:限制|约束|规则|规定)",
     "any"),
    ("injection.persona", "high", "忘掉你是谁（抹去模型身份）",
     r"(?:忘掉|忘记|忘了|抛开|抛弃|丢掉)(?:你是谁|你原来是谁|你本来是谁|你(?:原来|原本|本来|之前|以前|先前)?的身份)", "imperative"),
    ("injection.persona", "high", "两种回答：正常 + 越狱",
     r"(?:两种|两个|两段|两次|两份)(?:不同的?)?(?:回答|回复|答案|响应|版本)" + r"[^\n]{0,60}?(?:越狱|无限制|不受限|没有限制|开发者模式|dan|🔓|不受任何|不受约束|解放|解禁)",
     "any"),
]
