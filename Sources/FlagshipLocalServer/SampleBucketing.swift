import Foundation

extension ServedBucketingFile {
    /// A small bucketing file to try bucketing mode against, written as it is served:
    /// - "Checkout button", an A/B test for everyone, half the visitors on each colour
    ///   (`btnColor`: `"blue"` for the original, `"green"` for the variation);
    /// - "VIP free shipping", a toggle for visitors whose context has `isVip == true`
    ///   (`freeShipping: true`);
    /// - "Plan banner", a personalisation for `plan` `"pro"` or `"enterprise"`
    ///   (`bannerText` and `discountPercent`).
    public static let sampleData = Data(
        #"""
        {
          "panic": false,
          "accountSettings": {"enabledXPC": false, "enabled1V1T": false},
          "campaigns": [
            {
              "id": "c-checkout-button", "name": "Checkout button", "slug": "checkout-button", "type": "ab",
              "variationGroups": [
                {
                  "id": "vg-checkout-button-everyone", "name": "Everyone",
                  "targeting": {"targetingGroups": [
                    {"targetings": [{"key": "fs_all_users", "operator": "EQUALS", "value": ""}]}
                  ]},
                  "variations": [
                    {"id": "v-checkout-button-blue", "name": "Original (blue)", "reference": true, "allocation": 50,
                     "modifications": {"type": "FLAG", "value": {"btnColor": "blue"}}},
                    {"id": "v-checkout-button-green", "name": "Green", "allocation": 50,
                     "modifications": {"type": "FLAG", "value": {"btnColor": "green"}}}
                  ]
                }
              ]
            },
            {
              "id": "c-vip-shipping", "name": "VIP free shipping", "slug": "vip-free-shipping", "type": "toggle",
              "variationGroups": [
                {
                  "id": "vg-vip-shipping-vips", "name": "VIP visitors",
                  "targeting": {"targetingGroups": [
                    {"targetings": [{"key": "isVip", "operator": "EQUALS", "value": true}]}
                  ]},
                  "variations": [
                    {"id": "v-vip-shipping-on", "name": "Free shipping", "allocation": 100,
                     "modifications": {"type": "FLAG", "value": {"freeShipping": true}}}
                  ]
                }
              ]
            },
            {
              "id": "c-plan-banner", "name": "Plan banner", "slug": "plan-banner", "type": "perso",
              "variationGroups": [
                {
                  "id": "vg-plan-banner-paying", "name": "Pro and Enterprise plans",
                  "targeting": {"targetingGroups": [
                    {"targetings": [{"key": "plan", "operator": "EQUALS", "value": ["pro", "enterprise"]}]}
                  ]},
                  "variations": [
                    {"id": "v-plan-banner-thanks", "name": "Thank-you banner", "allocation": 100,
                     "modifications": {"type": "FLAG", "value": {"bannerText": "Thanks for your trust", "discountPercent": 10}}}
                  ]
                }
              ]
            }
          ]
        }

        """#.utf8
    )

    /// `sampleData`, last modified at `lastModified`.
    public static func sample(lastModified: Date = Date()) -> ServedBucketingFile {
        do {
            return try ServedBucketingFile(data: sampleData, lastModified: lastModified)
        } catch {
            // A constant of this file, checked by the tests: only an edit here can get here.
            preconditionFailure("the built-in sample bucketing file is not usable: \(error)")
        }
    }
}
