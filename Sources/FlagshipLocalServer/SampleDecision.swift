import Flagship

extension DecisionSource {
    /// A small decision to try the SDK against: two campaigns whose flags cover every JSON kind
    /// a flag can hold (string, integer, double, bool, object, array, null), and account
    /// settings as the Decision API sends them with `extras[]=accountSettings`.
    public static let sampleDecision: FSJSONValue = [
        "visitorId": "sample-visitor",
        "panic": false,
        "campaigns": [
            [
                "id": "c-homepage", "name": "Homepage redesign", "slug": "homepage-redesign", "type": "ab",
                "variationGroupId": "vg-homepage", "variationGroupName": "All visitors",
                "variation": [
                    "id": "v-homepage-green", "name": "Green button", "reference": false,
                    "modifications": [
                        "type": "FLAG",
                        "value": ["btnColor": "green", "btnSize": 14, "price": 9.99, "showBanner": true],
                    ],
                ],
            ],
            [
                "id": "c-checkout", "name": "Checkout options", "slug": "checkout-options", "type": "toggle",
                "variationGroupId": "vg-checkout", "variationGroupName": "Returning visitors",
                "variation": [
                    "id": "v-checkout-express", "name": "Express checkout", "reference": false,
                    "modifications": [
                        "type": "JSON",
                        "value": [
                            "checkout": ["steps": 2, "express": true],
                            "paymentMethods": ["card", "paypal"],
                            "promoCode": nil,
                        ],
                    ],
                ],
            ],
        ],
        "extras": ["accountSettings": ["enabledXPC": false, "enabled1V1T": false]],
    ]
}
