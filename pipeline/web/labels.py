"""The page's words in Chinese and English, chosen by ``[project] language``."""

from __future__ import annotations

LABELS: dict[str, dict[str, str]] = {
    "en": {
        "title": "kbwatch status", "overview": "Overview", "runs": "Runs", "reviews": "Reviews", "search": "Search",
        "login": "Log in", "logout": "Log out", "logged_in": "logged in", "token": "Token",
        "service": "Service", "running": "running", "stopped": "stopped", "dead": "stopped unexpectedly",
        "queue": "queue", "in_flight": "in flight", "projects": "Projects", "project": "Project",
        "status": "Status", "documents": "Documents", "failed": "Failed", "pending_reviews": "Pending reviews",
        "recent_runs": "Recent runs", "failures": "Failures", "source": "File", "outcome": "Outcome",
        "reason": "Reason", "finished": "Finished", "retry": "Retry", "retry_all": "Retry all",
        "all": "all", "filter": "Filter", "no_runs": "No runs yet.", "no_failures": "No failures.",
        "no_reviews": "Nothing waits for review.", "document": "Document", "where": "Where", "rule": "Rule",
        "severity": "Severity", "excerpt": "Excerpt (masked)", "approve": "Approve", "reject": "Reject",
        "approve_all": "Approve all", "question": "Question", "ask": "Search", "no_match": "Nothing found.",
        "excluded": "Left out (waiting for review or rejected)", "citation": "Citation",
        "login_to_act": "Log in to retry or review.", "bad_token": "Wrong token.",
        "refused_projects": "Refused projects", "live": "updates every few seconds",
        "pack": "Context as `kbwatch ask` gives it",
        "done": "done", "duplicate": "duplicate", "conflict": "conflict", "queued": "queued",
    },
    "zh": {
        "title": "kbwatch 状态", "overview": "总览", "runs": "处理记录", "reviews": "待审核", "search": "搜索",
        "login": "登录", "logout": "退出", "logged_in": "已登录", "token": "令牌",
        "service": "服务", "running": "运行中", "stopped": "已停止", "dead": "意外停止",
        "queue": "排队", "in_flight": "处理中", "projects": "项目", "project": "项目",
        "status": "状态", "documents": "文档数", "failed": "失败", "pending_reviews": "待审核",
        "recent_runs": "最近处理", "failures": "失败的文件", "source": "文件", "outcome": "结果",
        "reason": "原因", "finished": "完成时间", "retry": "重试", "retry_all": "全部重试",
        "all": "全部", "filter": "筛选", "no_runs": "还没有处理记录。", "no_failures": "没有失败的文件。",
        "no_reviews": "没有待审核的内容。", "document": "文档", "where": "位置", "rule": "规则",
        "severity": "严重度", "excerpt": "摘录（已遮盖）", "approve": "批准", "reject": "拒绝",
        "approve_all": "全部批准", "question": "问题", "ask": "搜索", "no_match": "没有找到相关内容。",
        "excluded": "未采用（待审核或已拒绝）", "citation": "出处",
        "login_to_act": "登录后可重试或审核。", "bad_token": "令牌不对。",
        "refused_projects": "被拒绝的项目", "live": "每隔几秒自动更新",
        "pack": "与 `kbwatch ask` 相同的上下文",
        "done": "完成", "duplicate": "重复", "conflict": "冲突", "queued": "排队",
    },
}


def labels_for(language: str) -> dict[str, str]:
    return LABELS.get(language, LABELS["en"])
