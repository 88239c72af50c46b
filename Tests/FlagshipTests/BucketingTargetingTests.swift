import XCTest

@testable import Flagship

/// Targeting rules as BUCKETING.md states them (the Decision API's semantics).
final class BucketingTargetingTests: XCTestCase {
    // MARK: Strings

    func testStringEqualsIgnoresCase() throws {
        XCTAssertTrue(try ruleMatches("EQUALS", #""Premium""#, context: ["k": .string("PREMIUM")]))
        XCTAssertFalse(try ruleMatches("EQUALS", #""premium""#, context: ["k": .string("premium+")]))
        XCTAssertFalse(try ruleMatches("NOT_EQUALS", #""Premium""#, context: ["k": .string("pREMIUM")]))
        XCTAssertTrue(try ruleMatches("NOT_EQUALS", #""premium""#, context: ["k": .string("free")]))
    }

    func testStringContainsStartsAndEndsIgnoreCase() throws {
        let context: [String: FSJSONValue] = ["k": .string("Google Pixel X")]
        XCTAssertTrue(try ruleMatches("CONTAINS", #""PIXEL""#, context: context))
        XCTAssertFalse(try ruleMatches("CONTAINS", #""iphone""#, context: context))
        XCTAssertFalse(try ruleMatches("NOT_CONTAINS", #""pixel""#, context: context))
        XCTAssertTrue(try ruleMatches("NOT_CONTAINS", #""iphone""#, context: context))
        XCTAssertTrue(try ruleMatches("STARTS_WITH", #""google""#, context: context))
        XCTAssertFalse(try ruleMatches("STARTS_WITH", #""pixel""#, context: context))
        XCTAssertTrue(try ruleMatches("ENDS_WITH", #""PIXEL x""#, context: context))
        XCTAssertFalse(try ruleMatches("ENDS_WITH", #""google""#, context: context))
        XCTAssertTrue(try ruleMatches("CONTAINS", #""""#, context: context), "every string contains the empty string")
    }

    /// Lower-cased first: `"Zebra"` sorts after `"apple"`, though `Z` is before `a` in ASCII.
    func testStringOrderingIsLexicographicOnLowercasedText() throws {
        let context: [String: FSJSONValue] = ["k": .string("Zebra")]
        XCTAssertTrue(try ruleMatches("GREATER_THAN", #""apple""#, context: context))
        XCTAssertFalse(try ruleMatches("LOWER_THAN", #""apple""#, context: context))
        XCTAssertTrue(try ruleMatches("GREATER_THAN_OR_EQUALS", #""ZEBRA""#, context: context))
        XCTAssertTrue(try ruleMatches("LOWER_THAN_OR_EQUALS", #""zebra""#, context: context))
        XCTAssertFalse(try ruleMatches("GREATER_THAN", #""zebra""#, context: context))
        XCTAssertTrue(try ruleMatches("LOWER_THAN", #""zebras""#, context: context), "a prefix sorts first")
        XCTAssertTrue(try ruleMatches("GREATER_THAN", #""10""#, context: ["k": .string("9")]), "strings, not numbers")
    }

    func testStringsBeyondASCIIAreLowercasedToo() throws {
        XCTAssertTrue(try ruleMatches("EQUALS", #""ÉTÉ""#, context: ["k": .string("été")]))
        XCTAssertTrue(try ruleMatches("EQUALS", #""été""#, context: ["k": .string("ÉTÉ")]))
        XCTAssertTrue(try ruleMatches("CONTAINS", #""ÀË""#, context: ["k": .string("vgidéééàëééééé")]))
        let long = "A Context Value Longer Than Fifteen Bytes"
        XCTAssertTrue(try ruleMatches("ENDS_WITH", #""fifteen bytes""#, context: ["k": .string(long)]))
    }

    // MARK: Numbers and booleans

    func testIntegersAndDoublesCompareAsNumbers() throws {
        XCTAssertTrue(try ruleMatches("EQUALS", "5.0", context: ["k": .int(5)]))
        XCTAssertTrue(try ruleMatches("EQUALS", "5", context: ["k": .double(5)]))
        XCTAssertFalse(try ruleMatches("NOT_EQUALS", "5", context: ["k": .double(5)]))
        XCTAssertTrue(try ruleMatches("NOT_EQUALS", "5", context: ["k": .double(5.5)]))
        XCTAssertTrue(try ruleMatches("GREATER_THAN", "5", context: ["k": .double(5.5)]))
        XCTAssertFalse(try ruleMatches("GREATER_THAN", "5", context: ["k": .int(5)]))
        XCTAssertTrue(try ruleMatches("GREATER_THAN_OR_EQUALS", "5", context: ["k": .int(5)]))
        XCTAssertTrue(try ruleMatches("LOWER_THAN", "0", context: ["k": .int(-3)]))
        XCTAssertTrue(try ruleMatches("LOWER_THAN_OR_EQUALS", "-3", context: ["k": .double(-3)]))
        XCTAssertFalse(try ruleMatches("LOWER_THAN_OR_EQUALS", "-3.5", context: ["k": .int(-3)]))
    }

    func testStringOperatorsOnNumbersAreFalse() throws {
        for op in ["CONTAINS", "NOT_CONTAINS", "STARTS_WITH", "ENDS_WITH"] {
            XCTAssertFalse(try ruleMatches(op, "5", context: ["k": .int(5)]), op)
            XCTAssertFalse(try ruleMatches(op, "5", context: ["k": .int(15)]), op)
        }
    }

    func testBooleansOnlyEqualOrDiffer() throws {
        XCTAssertTrue(try ruleMatches("EQUALS", "true", context: ["k": .bool(true)]))
        XCTAssertFalse(try ruleMatches("EQUALS", "false", context: ["k": .bool(true)]))
        XCTAssertTrue(try ruleMatches("NOT_EQUALS", "false", context: ["k": .bool(true)]))
        for op in ["GREATER_THAN", "LOWER_THAN_OR_EQUALS", "CONTAINS", "STARTS_WITH"] {
            XCTAssertFalse(try ruleMatches(op, "false", context: ["k": .bool(true)]), op)
            XCTAssertFalse(try ruleMatches(op, "true", context: ["k": .bool(true)]), op)
        }
    }

    /// `"5"` never equals nor differs from `5`: the rule is simply false.
    func testKindsThatDisagreeMakeEveryComparisonFalse() throws {
        for op in ["EQUALS", "NOT_EQUALS", "GREATER_THAN", "LOWER_THAN_OR_EQUALS", "CONTAINS", "NOT_CONTAINS"] {
            XCTAssertFalse(try ruleMatches(op, "5", context: ["k": .string("5")]), "\(op) number vs string")
            XCTAssertFalse(try ruleMatches(op, #""5""#, context: ["k": .int(5)]), "\(op) string vs number")
            XCTAssertFalse(try ruleMatches(op, "true", context: ["k": .string("true")]), "\(op) bool vs string")
            XCTAssertFalse(try ruleMatches(op, "1", context: ["k": .bool(true)]), "\(op) number vs bool")
            XCTAssertFalse(try ruleMatches(op, "null", context: ["k": .string("null")]), "\(op) null value")
            XCTAssertFalse(try ruleMatches(op, #"{"a": 1}"#, context: ["k": .string("a")]), "\(op) object value")
            XCTAssertFalse(try ruleMatches(op, #""a""#, context: ["k": .array([.string("a")])]), "\(op) list in the context")
        }
    }

    // MARK: Lists

    func testListValueEqualsOrContainsWhenAnyElementDoes() throws {
        XCTAssertTrue(try ruleMatches("EQUALS", #"["fr", "DE"]"#, context: ["k": .string("de")]))
        XCTAssertFalse(try ruleMatches("EQUALS", #"["fr", "de"]"#, context: ["k": .string("it")]))
        XCTAssertTrue(try ruleMatches("CONTAINS", #"["xyz", "pix"]"#, context: ["k": .string("Pixel")]))
        XCTAssertFalse(try ruleMatches("CONTAINS", #"["xyz", "abc"]"#, context: ["k": .string("Pixel")]))
        XCTAssertTrue(try ruleMatches("EQUALS", "[1, 2.0, 3]", context: ["k": .int(2)]))
        XCTAssertTrue(try ruleMatches("EQUALS", #"["2", 2]"#, context: ["k": .int(2)]), "one element of the right kind suffices")
    }

    func testListValueDiffersOrExcludesOnlyWhenEveryElementDoes() throws {
        XCTAssertTrue(try ruleMatches("NOT_EQUALS", #"["fr", "de"]"#, context: ["k": .string("it")]))
        XCTAssertFalse(try ruleMatches("NOT_EQUALS", #"["fr", "de"]"#, context: ["k": .string("FR")]))
        XCTAssertTrue(try ruleMatches("NOT_CONTAINS", #"["xyz", "abc"]"#, context: ["k": .string("Pixel")]))
        XCTAssertFalse(try ruleMatches("NOT_CONTAINS", #"["xyz", "IXE"]"#, context: ["k": .string("Pixel")]))
        XCTAssertFalse(try ruleMatches("NOT_EQUALS", #"["it", 5]"#, context: ["k": .string("fr")]), "5 does not pass against a string")
    }

    func testListValueWithOtherOperatorsIsFalse() throws {
        for op in ["STARTS_WITH", "ENDS_WITH", "GREATER_THAN", "GREATER_THAN_OR_EQUALS", "LOWER_THAN", "LOWER_THAN_OR_EQUALS"] {
            XCTAssertFalse(try ruleMatches(op, #"["p", "l"]"#, context: ["k": .string("pixel")]), op)
            XCTAssertFalse(try ruleMatches(op, "[1, 100]", context: ["k": .int(50)]), op)
        }
        XCTAssertFalse(try ruleMatches("SEMVER_EQUALS", #"["1.0.0"]"#, context: ["k": .string("1.0.0")]))
    }

    // MARK: Missing keys, existence

    func testMissingKeyIsFalseForEveryOperatorButExistence() throws {
        let context: [String: FSJSONValue] = ["other": .string("x")]
        for op in TargetingOperator.allCases where op != .exists && op != .notExists {
            XCTAssertFalse(try ruleMatches(op.rawValue, #""x""#, context: context), op.rawValue)
            XCTAssertFalse(try ruleMatches(op.rawValue, #"["x", "y"]"#, context: context), "\(op.rawValue) with a list")
        }
        XCTAssertFalse(try ruleMatches("EXISTS", "true", context: context))
        XCTAssertTrue(try ruleMatches("NOT_EXISTS", "true", context: context))
    }

    func testExistsIsInvertedByAFalseValueOnly() throws {
        let present: [String: FSJSONValue] = ["k": .int(0)]
        XCTAssertTrue(try ruleMatches("EXISTS", "true", context: present))
        XCTAssertTrue(try ruleMatches("EXISTS", #""anything""#, context: present))
        XCTAssertTrue(try ruleMatches("EXISTS", "null", context: present))
        XCTAssertFalse(try ruleMatches("EXISTS", "false", context: present))
        XCTAssertTrue(try ruleMatches("EXISTS", "false", context: [:]))
        XCTAssertFalse(try ruleMatches("NOT_EXISTS", "true", context: present))
        XCTAssertTrue(try ruleMatches("NOT_EXISTS", "false", context: present))
        XCTAssertFalse(try ruleMatches("NOT_EXISTS", "false", context: [:]))
        XCTAssertTrue(try ruleMatches("EXISTS", "0", context: ["k": .null]), "a null value is present")
    }

    // MARK: Special keys

    func testFsAllUsersMatchesWhateverItsOperatorAndValue() throws {
        XCTAssertTrue(try ruleMatches(key: "fs_all_users", "EQUALS", #""""#))
        XCTAssertTrue(try ruleMatches(key: "fs_all_users", "NOT_EQUALS", #""""#))
        XCTAssertTrue(try ruleMatches(key: "fs_all_users", "GREATER_THAN", "12"))
        XCTAssertTrue(try ruleMatches(key: "fs_all_users", "NOT_EXISTS", "true"))
        XCTAssertTrue(try ruleMatches(key: "fs_all_users", "NO_SUCH_OPERATOR", "null"))
    }

    func testFsUsersComparesTheVisitorIdNotTheContext() throws {
        XCTAssertTrue(try ruleMatches(key: "fs_users", "EQUALS", #""Visitor_1""#, visitorId: "visitor_1"))
        XCTAssertFalse(try ruleMatches(key: "fs_users", "EQUALS", #""visitor_1""#, context: ["fs_users": .string("visitor_1")], visitorId: "someone"))
        XCTAssertTrue(try ruleMatches(key: "fs_users", "EQUALS", #"["a", "visitor_2"]"#, visitorId: "VISITOR_2"))
        XCTAssertTrue(try ruleMatches(key: "fs_users", "STARTS_WITH", #""vis""#, visitorId: "visitor_1"))
        XCTAssertTrue(try ruleMatches(key: "fs_users", "EXISTS", "true", visitorId: "visitor_1"))
        XCTAssertFalse(try ruleMatches(key: "fs_users", "EQUALS", "1", visitorId: "1"), "the visitor id is a string")
    }

    func testSdkKeysAreReadFromTheContextLikeAnyOther() throws {
        XCTAssertTrue(try ruleMatches(key: "sdk_deviceModel", "CONTAINS", #""pixel""#, context: ["sdk_deviceModel": .string("Google Pixel X")]))
        XCTAssertFalse(try ruleMatches(key: "sdk_deviceModel", "CONTAINS", #""pixel""#, context: ["sdk_devicemodel": .string("Google Pixel X")]),
                       "keys are case-sensitive")
    }

    // MARK: Unknown operators

    func testUnknownOperatorNeverMatchesAndIsWarnedOnce() throws {
        let file = try BucketingFile(json: BucketingJSON.file(
            BucketingJSON.campaign("c1", BucketingJSON.group(
                "g1", targeting: BucketingJSON.targeting([BucketingJSON.rule("k", "REGEX", #"".*""#)], [BucketingJSON.rule("k", "REGEX", #""a""#)]),
                BucketingJSON.variation("v1", 100))),
            BucketingJSON.campaign("c2", BucketingJSON.group(
                "g2", targeting: BucketingJSON.targeting([BucketingJSON.rule("k", "REGEX", #""b""#)]), BucketingJSON.variation("v2", 100))),
            BucketingJSON.campaign("c3", BucketingJSON.group(
                "g3", targeting: BucketingJSON.targeting([BucketingJSON.rule("k", "equals", #""a""#)]), BucketingJSON.variation("v3", 100)))))
        XCTAssertEqual(file.assignedIds(visitorId: "v", context: ["k": .string("a")]), [])
        XCTAssertEqual(file.warnings, [
            #"unknown targeting operator "REGEX" (first at campaign "c1", variation group "g1", targeting group #1, rule #1); rules with it never match"#,
            #"unknown targeting operator "equals" (first at campaign "c3", variation group "g3", targeting group #1, rule #1); rules with it never match"#,
        ])
    }

    // MARK: Semantic versions

    func testSemverComparesVersionsByPrecedence() throws {
        let context: [String: FSJSONValue] = ["k": .string("1.10.0")]
        XCTAssertTrue(try ruleMatches("SEMVER_GREATER_THAN", #""1.9.0""#, context: context), "numerically, not as text")
        XCTAssertTrue(try ruleMatches("SEMVER_LOWER_THAN", #""2.0.0""#, context: context))
        XCTAssertTrue(try ruleMatches("SEMVER_EQUALS", #""v1.10.0""#, context: context))
        XCTAssertTrue(try ruleMatches("SEMVER_EQUALS", #""1.10""#, context: context), "a missing patch is 0")
        XCTAssertFalse(try ruleMatches("SEMVER_NOT_EQUALS", #""1.10.0+build.7""#, context: context), "build metadata is ignored")
        XCTAssertTrue(try ruleMatches("SEMVER_NOT_EQUALS", #""1.10.1""#, context: context))
        XCTAssertTrue(try ruleMatches("SEMVER_GREATER_THAN_OR_EQUALS", #""1.10.0""#, context: context))
        XCTAssertTrue(try ruleMatches("SEMVER_LOWER_THAN_OR_EQUALS", #""1.10.0""#, context: context))
        XCTAssertFalse(try ruleMatches("SEMVER_LOWER_THAN", #""1.10.0""#, context: context))
    }

    /// semver.org's example order: 1.0.0-alpha < -alpha.1 < -alpha.beta < -beta < -beta.2 < -beta.11 < -rc.1 < 1.0.0.
    func testSemverOrdersPreReleasesBelowTheRelease() throws {
        let ordered = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
                       "1.0.0-rc.1", "1.0.0"]
        for (index, lower) in ordered.enumerated() {
            for higher in ordered[(index + 1)...] {
                XCTAssertTrue(try ruleMatches("SEMVER_LOWER_THAN", "\"\(higher)\"", context: ["k": .string(lower)]), "\(lower) < \(higher)")
                XCTAssertTrue(try ruleMatches("SEMVER_GREATER_THAN", "\"\(lower)\"", context: ["k": .string(higher)]), "\(higher) > \(lower)")
            }
        }
        XCTAssertTrue(try ruleMatches("SEMVER_EQUALS", #""1.0.0-RC.1""#, context: ["k": .string("1.0.0-rc.1")]), "case-insensitive")
    }

    func testInvalidVersionsMakeSemverRulesFalse() throws {
        for invalid in ["", "1.2.3.4", "1..2", "1.2.x", " 1.2.3", "1.2.3-", "1.2.3-a..b", "1.2.3+", "version", "v", "1.2.3-é",
                        "99999999999999999999.0.0"] {
            for op in ["SEMVER_EQUALS", "SEMVER_NOT_EQUALS", "SEMVER_GREATER_THAN", "SEMVER_LOWER_THAN_OR_EQUALS"] {
                XCTAssertFalse(try ruleMatches(op, #""1.0.0""#, context: ["k": .string(invalid)]), "\(op) context \"\(invalid)\"")
                XCTAssertFalse(try ruleMatches(op, "\"\(invalid)\"", context: ["k": .string("1.0.0")]), "\(op) value \"\(invalid)\"")
            }
        }
        XCTAssertFalse(try ruleMatches("SEMVER_EQUALS", "1", context: ["k": .int(1)]), "versions are strings")
        XCTAssertFalse(try ruleMatches("SEMVER_NOT_EQUALS", #""1.0.0""#, context: ["k": .int(2)]))
    }

    // MARK: Groups and rules

    func testTargetingGroupsAreOredAndTheirRulesAnded() throws {
        let targeting = BucketingJSON.targeting(
            [BucketingJSON.rule("age", "GREATER_THAN", "17"), BucketingJSON.rule("country", "EQUALS", #""fr""#)],
            [BucketingJSON.rule("vip", "EQUALS", "true")])
        let file = try BucketingFile(json: BucketingJSON.file(BucketingJSON.campaign(
            "c", BucketingJSON.group("g", targeting: targeting, BucketingJSON.variation("v", 100)))))
        XCTAssertEqual(file.assignedIds(visitorId: "a", context: ["age": .int(18), "country": .string("FR")]), ["c/g/v"])
        XCTAssertEqual(file.assignedIds(visitorId: "a", context: ["age": .int(18), "country": .string("de")]), [])
        XCTAssertEqual(file.assignedIds(visitorId: "a", context: ["age": .int(12), "vip": .bool(true)]), ["c/g/v"])
        XCTAssertEqual(file.assignedIds(visitorId: "a", context: ["age": .int(12), "vip": .bool(false)]), [])
    }

    func testNoTargetingMatchesNobody() throws {
        let everyone: [String: FSJSONValue] = ["k": .string("x")]
        for targeting in ["null", "{}", #"{"targetingGroups": []}"#, #"{"targetingGroups": [{"targetings": []}]}"#,
                          #"{"targetingGroups": [{}]}"#] {
            let file = try BucketingFile(json: BucketingJSON.file(BucketingJSON.campaign(
                "c", BucketingJSON.group("g", targeting: targeting, BucketingJSON.variation("v", 100)))))
            XCTAssertEqual(file.assignedIds(visitorId: "a", context: everyone), [], targeting)
        }
    }
}
