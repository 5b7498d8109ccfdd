#include "tools/common/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace mcdl::tools {
namespace {

constexpr double kWidth = 760, kPanelHeight = 230, kLeft = 60, kRight = 190, kTop = 30, kBottom = 35;
const char* const kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", v);
  return text;
}


// [low, high] of the finite values, widened when flat or empty.
std::pair<double, double> y_range(const Panel& panel) {
  double low = std::numeric_limits<double>::infinity(), high = -low;
  for (const Series& s : panel.series)
    for (double v : s.y)
      if (std::isfinite(v)) low = std::min(low, v), high = std::max(high, v);
  if (!std::isfinite(low)) return {0.0, 1.0};
  if (high - low < 1e-12) return {low - 0.5, high + 0.5};
  const double pad = 0.05 * (high - low);
  return {low - pad, high + pad};
}

// A round tick spacing (1, 2, 2.5 or 5 times a power of ten) giving about `target` ticks over `span`.
double nice_step(double span, double target) {
  const double raw = span / target, magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0})
    if (m * magnitude >= raw) return m * magnitude;
  return 10.0 * magnitude;
}

// The multiples of `step` in [low, high].
std::vector<double> ticks(double low, double high, double step) {
  std::vector<double> out;
  for (double v = std::ceil(low / step - 1e-9) * step; v <= high + 1e-9 * step; v += step)
    out.push_back(std::abs(v) < 1e-9 * step ? 0.0 : v);  // no "-0" from rounding
  return out;
}

}  // namespace

std::string line_charts_svg(const std::vector<double>& x, const std::vector<Panel>& panels) {
  const double height = kPanelHeight * static_cast<double>(panels.size());
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(kWidth) + "\" height=\"" +
                    number(height) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  double x_low = x.empty() ? 0.0 : *std::min_element(x.begin(), x.end());
  double x_high = x.empty() ? 1.0 : *std::max_element(x.begin(), x.end());
  if (x_high - x_low < 1e-12) x_high = x_low + 1.0;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kPanelHeight - kTop - kBottom;
  for (size_t p = 0; p < panels.size(); ++p) {
    const Panel& panel = panels[p];
    const double top = kPanelHeight * static_cast<double>(p) + kTop;
    const auto [y_low, y_high] = y_range(panel);
    auto px = [&](double v) { return kLeft + (v - x_low) / (x_high - x_low) * plot_w; };
    auto py = [&](double v) { return top + plot_h - (v - y_low) / (y_high - y_low) * plot_h; };
    svg += "<text x=\"" + number(kLeft) + "\" y=\"" + number(top - 10) + "\" font-size=\"13\" font-weight=\"bold\">" +
           markup_escape(panel.title) + "</text>\n";
    svg += "<rect x=\"" + number(kLeft) + "\" y=\"" + number(top) + "\" width=\"" + number(plot_w) + "\" height=\"" +
           number(plot_h) + "\" fill=\"none\" stroke=\"#999\"/>\n";
    for (double v : ticks(y_low, y_high, nice_step(y_high - y_low, 4))) {  // gridlines with their values
      const double y = py(v);
      svg += "<line x1=\"" + number(kLeft) + "\" x2=\"" + number(kLeft + plot_w) + "\" y1=\"" + number(y) +
             "\" y2=\"" + number(y) + "\" stroke=\"#eee\"/>\n";
      svg += "<text x=\"" + number(kLeft - 5) + "\" y=\"" + number(y + 4) + "\" text-anchor=\"end\">" + number(v) +
             "</text>\n";
    }
    for (double v : ticks(x_low, x_high, std::max(1.0, nice_step(x_high - x_low, 5)))) {  // whole epochs
      svg += "<text x=\"" + number(px(v)) + "\" y=\"" + number(top + plot_h + 15) + "\" text-anchor=\"middle\">" +
             number(v) + "</text>\n";
    }
    svg += "<text x=\"" + number(kLeft + plot_w / 2) + "\" y=\"" + number(top + plot_h + 30) +
           "\" text-anchor=\"middle\">epoch</text>\n";
    if (!panel.y_label.empty())
      svg += "<text transform=\"translate(14," + number(top + plot_h / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
             markup_escape(panel.y_label) + "</text>\n";
    for (size_t s = 0; s < panel.series.size(); ++s) {
      const Series& series = panel.series[s];
      const char* colour = kColours[s % (sizeof kColours / sizeof kColours[0])];
      std::string points;
      int run = 0;  // values in the current line
      auto flush = [&] {
        if (run >= 2)  // a lone value is only its marker
          svg += "<polyline fill=\"none\" stroke=\"" + std::string(colour) + "\" stroke-width=\"1.8\" points=\"" +
                 points + "\"/>\n";
        points.clear();
        run = 0;
      };
      for (size_t i = 0; i < series.y.size() && i < x.size(); ++i) {
        if (!std::isfinite(series.y[i])) {
          flush();
          continue;
        }
        points += (points.empty() ? "" : " ") + number(px(x[i])) + "," + number(py(series.y[i]));
        ++run;
      }
      flush();
      if (x.size() <= 50)  // few epochs: a marker on each value (a single epoch draws no line)
        for (size_t i = 0; i < series.y.size() && i < x.size(); ++i)
          if (std::isfinite(series.y[i]))
            svg += "<circle cx=\"" + number(px(x[i])) + "\" cy=\"" + number(py(series.y[i])) + "\" r=\"2.2\" fill=\"" +
                   colour + "\"/>\n";
      const double ly = top + 12 + 16 * static_cast<double>(s), lx = kLeft + plot_w + 15;
      svg += "<line x1=\"" + number(lx) + "\" x2=\"" + number(lx + 18) + "\" y1=\"" + number(ly - 4) + "\" y2=\"" +
             number(ly - 4) + "\" stroke=\"" + colour + "\" stroke-width=\"2\"/>\n";
      svg += "<text x=\"" + number(lx + 24) + "\" y=\"" + number(ly) + "\">" + markup_escape(series.name) + "</text>\n";
    }
  }
  return svg + "</svg>\n";
}

std::string svg_number(double v) { return number(v); }

std::string markup_escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '&') out += "&amp;";
    else if (ch == '<') out += "&lt;";
    else if (ch == '>') out += "&gt;";
    else if (ch == '"') out += "&quot;";
    else out += ch;
  }
  return out;
}

}  // namespace mcdl::tools
