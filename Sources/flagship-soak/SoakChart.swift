import Foundation

/// The run drawn as SVG by hand (no plotting library here): three panels over the same time
/// axis, each with its own labelled y axis and legend. Backlog (hits waiting), throughput
/// (delivered and accepted hits per second) and size (the store on disk and the tool's RSS and
/// its anonymous part, MB).
struct SoakChart {
    struct Series {
        let name: String
        let color: String
        let dashed: Bool
        let points: [(x: Double, y: Double)]
    }

    struct Panel {
        let title: String
        let unit: String
        let series: [Series]
    }

    let title: String
    /// Lines under the title (at most two fit above the first panel).
    let subtitle: [String]
    let panels: [Panel]

    static let width = 960.0
    static let panelHeight = 200.0
    static let left = 90.0
    static let right = 30.0
    static let top = 100.0
    static let gap = 70.0
    static let bottom = 60.0

    init(samples: [Sample], title: String, subtitle: [String]) {
        self.title = title
        self.subtitle = subtitle
        let time = samples.map(\.elapsed)
        func series(_ name: String, _ color: String, dashed: Bool = false, _ value: (Sample) -> Double?) -> Series {
            Series(name: name, color: color, dashed: dashed,
                   points: zip(time, samples).compactMap { x, sample in value(sample).map { (x, $0) } })
        }
        // The first sample has no interval: it has no rate to draw.
        let rated = Array(samples.dropFirst())
        let ratedTime = rated.map(\.elapsed)
        func rate(_ name: String, _ color: String, dashed: Bool = false, _ value: (Sample) -> Double) -> Series {
            Series(name: name, color: color, dashed: dashed, points: zip(ratedTime, rated).map { ($0, value($1)) })
        }
        panels = [
            Panel(title: "Backlog", unit: "hits waiting", series: [
                series("backlog (hits waiting)", "#d62728") { Double($0.backlog) },
            ]),
            Panel(title: "Throughput", unit: "hits/s", series: [
                rate("delivered/s (server)", "#1f77b4") { $0.deliveredRate },
                rate("accepted/s (SDK)", "#7f7f7f", dashed: true) { $0.acceptedRate },
            ]),
            Panel(title: "Size", unit: "MB", series: [
                series("store file (.sqlite + -wal)", "#2ca02c") { Double($0.storeBytes) / 1e6 },
                series("RSS (tool process)", "#9467bd", dashed: true) { $0.rssBytes.map { Double($0) / 1e6 } },
                series("of which anonymous", "#ff7f0e", dashed: true) { $0.rssAnonymousBytes.map { Double($0) / 1e6 } },
            ]),
        ]
    }

    var svg: String {
        let height = Self.top + Double(panels.count) * Self.panelHeight + Double(panels.count - 1) * Self.gap + Self.bottom
        let allX = panels.flatMap { $0.series.flatMap { $0.points.map(\.x) } }
        // Time ends where the run did; only the y axes round up to a tick.
        let xAxis = Axis(low: 0, high: max(allX.max() ?? 1, 1), roundingUp: false)
        var out = """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Self.number(Self.width))" height="\(Self.number(height))" \
            viewBox="0 0 \(Self.number(Self.width)) \(Self.number(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(Self.number(Self.left))" y="30" font-size="18" font-weight="bold">\(Self.escaped(title))</text>

            """
        for (index, line) in subtitle.prefix(2).enumerated() {
            out += "<text x=\"\(Self.number(Self.left))\" y=\"\(52 + 16 * index)\" font-size=\"12\" fill=\"#444\">\(Self.escaped(line))</text>\n"
        }
        for (index, panel) in panels.enumerated() {
            let y = Self.top + Double(index) * (Self.panelHeight + Self.gap)
            out += drawing(panel, top: y, xAxis: xAxis)
        }
        out += "</svg>\n"
        return out
    }

    private func drawing(_ panel: Panel, top: Double, xAxis: Axis) -> String {
        let plotWidth = Self.width - Self.left - Self.right
        let bottom = top + Self.panelHeight
        let allY = panel.series.flatMap { $0.points.map(\.y) }
        let yAxis = Axis(low: 0, high: max(allY.max() ?? 1, 1e-9))
        func px(_ x: Double) -> Double { Self.left + (x - xAxis.low) / (xAxis.high - xAxis.low) * plotWidth }
        func py(_ y: Double) -> Double { bottom - (y - yAxis.low) / (yAxis.high - yAxis.low) * Self.panelHeight }

        var out = "<g>\n"
        out += "<text x=\"\(Self.number(Self.left))\" y=\"\(Self.number(top - 10))\" font-size=\"14\" font-weight=\"bold\">\(Self.escaped(panel.title))</text>\n"
        for tick in yAxis.ticks {
            let y = Self.number(py(tick))
            out += "<line x1=\"\(Self.number(Self.left))\" y1=\"\(y)\" x2=\"\(Self.number(Self.left + plotWidth))\" y2=\"\(y)\" stroke=\"#e5e5e5\"/>\n"
            out += "<text x=\"\(Self.number(Self.left - 6))\" y=\"\(y)\" text-anchor=\"end\" dominant-baseline=\"middle\">\(yAxis.label(tick))</text>\n"
        }
        for tick in xAxis.ticks {
            let x = Self.number(px(tick))
            out += "<line x1=\"\(x)\" y1=\"\(Self.number(bottom))\" x2=\"\(x)\" y2=\"\(Self.number(bottom + 4))\" stroke=\"#333\"/>\n"
            out += "<text x=\"\(x)\" y=\"\(Self.number(bottom + 17))\" text-anchor=\"middle\">\(xAxis.label(tick))</text>\n"
        }
        out += "<rect x=\"\(Self.number(Self.left))\" y=\"\(Self.number(top))\" width=\"\(Self.number(plotWidth))\" height=\"\(Self.number(Self.panelHeight))\" fill=\"none\" stroke=\"#333\"/>\n"
        out += "<text x=\"\(Self.number(Self.left + plotWidth / 2))\" y=\"\(Self.number(bottom + 34))\" text-anchor=\"middle\">elapsed (s)</text>\n"
        let middle = top + Self.panelHeight / 2
        out += "<text x=\"20\" y=\"\(Self.number(middle))\" text-anchor=\"middle\" transform=\"rotate(-90 20 \(Self.number(middle)))\">\(Self.escaped(panel.unit))</text>\n"
        for series in panel.series where !series.points.isEmpty {
            let points = series.points.map { "\(Self.number(px($0.x))),\(Self.number(py($0.y)))" }.joined(separator: " ")
            let dash = series.dashed ? " stroke-dasharray=\"6 4\"" : ""
            out += "<polyline points=\"\(points)\" fill=\"none\" stroke=\"\(series.color)\" stroke-width=\"2\"\(dash)/>\n"
            if series.points.count <= 60 {
                for point in series.points {
                    out += "<circle cx=\"\(Self.number(px(point.x)))\" cy=\"\(Self.number(py(point.y)))\" r=\"2.5\" fill=\"\(series.color)\"/>\n"
                }
            }
        }
        // The legend, right-aligned above the panel.
        var legendX = Self.left + plotWidth
        for series in panel.series.reversed() {
            let textWidth = Double(series.name.count) * 7.2
            legendX -= textWidth
            let y = top - 14
            out += "<text x=\"\(Self.number(legendX))\" y=\"\(Self.number(y))\" dominant-baseline=\"middle\">\(Self.escaped(series.name))</text>\n"
            let dash = series.dashed ? " stroke-dasharray=\"6 4\"" : ""
            out += "<line x1=\"\(Self.number(legendX - 30))\" y1=\"\(Self.number(y))\" x2=\"\(Self.number(legendX - 6))\" y2=\"\(Self.number(y))\" stroke=\"\(series.color)\" stroke-width=\"2\"\(dash)/>\n"
            legendX -= 48
        }
        out += "</g>\n"
        return out
    }

    /// A linear axis from `low` with 4 to 8 round ticks (1, 2 or 5 times a power of ten), its top
    /// raised to the tick past the data.
    struct Axis {
        let low: Double
        let high: Double
        let step: Double

        init(low: Double, high: Double, roundingUp: Bool = true) {
            let raw = max(high - low, 1e-9) / 5
            let magnitude = pow(10, floor(log10(raw)))
            let step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= raw } ?? 10 * magnitude
            self.low = low
            self.step = step
            self.high = roundingUp ? low + (max(high - low, step) / step).rounded(.up) * step : high
        }

        /// From `low` by `step`, none past `high` (give or take rounding).
        var ticks: [Double] {
            stride(from: low, through: high + step * 1e-6, by: step).map { $0 }
        }

        /// 1500 as "1.5k", 2000000 as "2M", 0.25 as "0.25".
        func label(_ value: Double) -> String {
            let size = abs(value)
            if size >= 1e6 { return SoakChart.trimmed(value / 1e6) + "M" }
            if size >= 1e4 { return SoakChart.trimmed(value / 1e3) + "k" }
            return SoakChart.trimmed(value)
        }
    }

    static func trimmed(_ value: Double) -> String {
        var text = String(format: "%.3f", value)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text == "-0" ? "0" : text
    }

    static func number(_ value: Double) -> String {
        String(format: "%.1f", value)
    }

    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    func write(to url: URL) throws(SoakError) {
        try SoakOutput.write(Data(svg.utf8), to: url)
    }
}
