"""Unit tests for plugins/scan_pii.py."""

import pytest

from kbwatch.pipeline.model import ParsedDocument
from kbwatch.plugins import scan_pii

W = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]


def make_id(body17):
    return body17 + "10X98765432"[sum(int(c) * w for c, w in zip(body17, W)) % 11]


def luhn(partial):
    total = 0
    for i, c in enumerate(reversed(partial)):
        d = int(c) * (2 if i % 2 == 0 else 1)
        total += d - 9 if d > 9 else d
    return partial + str((10 - total % 10) % 10)


def rules(text):
    return [f.rule for f in scan_pii.kb_scan(document=ParsedDocument(markdown=text), settings={})]


def test_resident_id_valid_and_x_checksum():
    assert rules("身份证号：" + make_id("11010519491231002")) == ["pii.cn-resident-id"]
    assert "pii.cn-resident-id" in rules("ID 11010519491231002X")


def test_resident_id_fullwidth():
    rid = make_id("44030519900101123")
    fw = "".join(chr(ord(c) + 0xFEE0) for c in rid)
    fs = scan_pii.scan_text("证件：" + fw)
    assert fs and fs[0].rule == "pii.cn-resident-id" and fs[0].offset == 3 and fs[0].length == 18


@pytest.mark.parametrize("bad", [
    "11010519491231002" + "1",      # wrong check digit
    make_id("11010519491331002"),   # month 13
    make_id("11010519490230002"),   # 30 February
    make_id("99010519491231002"),   # no such province
    make_id("11010530001231002"),   # born in the future
])
def test_resident_id_invalid(bad):
    assert "pii.cn-resident-id" not in rules(f"号码 {bad}")


def test_bank_cards():
    card = luhn("621700000000123456")  # 19-digit UnionPay
    assert rules(f"银行卡号：{card}") == ["pii.bank-card"]
    visa = luhn("453201511283036")
    assert "pii.bank-card" in rules(f"card {visa[:4]} {visa[4:8]} {visa[8:12]} {visa[12:]}")
    bad = card[:-1] + str((int(card[-1]) + 1) % 10)
    assert "pii.bank-card" not in rules(f"卡号 {bad}")


@pytest.mark.parametrize("text", ["订单号 2023111512345670", "timestamp 1700000000000", "0000000000000000",
                                  "ISBN 9787111213826", "serial 12345678901"])
def test_bank_card_false_positives(text):
    assert "pii.bank-card" not in rules(text)


def test_mobile_and_email():
    assert "pii.cn-mobile" in rules("联系电话 138 1234 5678")
    assert "pii.cn-mobile" in rules("+86-19912345678")
    assert "pii.cn-mobile" not in rules("编号 12812345678")
    fs = scan_pii.scan_text("mail zhang.san@example.com")
    assert fs[0].rule == "pii.email" and fs[0].severity == "low"


def test_pii_excerpt_masked():
    rid = make_id("11010519491231002")
    f = scan_pii.scan_text("身份证号：" + rid)[0]
    for i in range(len(rid) - 6):
        assert rid[i:i + 7] not in f.excerpt
