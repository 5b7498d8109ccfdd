#include "tools/common/embedding_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "tools/common/svg_chart.h"

namespace mcdl::tools {
namespace {

constexpr double kPlot = 560, kLeft = 40, kTop = 36, kLegendWidth = 260;
constexpr size_t kLegendEntries = 30;  // colours named in the legend; the rest counted

// A point's mark: a square (known class) or a disc, half-width 3.5.
std::string mark(double x, double y, bool square, const std::string& fill, const std::string& inside = "") {
  if (square)
    return "<rect x=\"" + svg_number(x - 3.5) + "\" y=\"" + svg_number(y - 3.5) +
           "\" width=\"7\" height=\"7\" fill=\"" + fill + "\">" + inside + "</rect>\n";
  return "<circle cx=\"" + svg_number(x) + "\" cy=\"" + svg_number(y) + "\" r=\"3.5\" fill=\"" + fill + "\">" + inside +
         "</circle>\n";
}

std::string ring(double x, double y) {
  return "<circle cx=\"" + svg_number(x) + "\" cy=\"" + svg_number(y) +
         "\" r=\"5.6\" fill=\"none\" stroke=\"black\" stroke-width=\"1.3\"/>\n";
}

std::string text(double x, double y, const std::string& words, const std::string& extra = "") {
  return "<text x=\"" + svg_number(x) + "\" y=\"" + svg_number(y) + "\"" + extra + ">" + markup_escape(words) +
         "</text>\n";
}

}  // namespace

std::string cluster_colour(int64_t c) {
  const double h = std::fmod(static_cast<double>(c) * 0.618034, 1.0) * 6.0;
  const double f = h - std::floor(h), q = 1 - f;
  const double rgb[6][3] = {{1, f, 0}, {q, 1, 0}, {0, 1, f}, {0, q, 1}, {f, 0, 1}, {1, 0, q}};
  char out[8];
  const double* v = rgb[static_cast<int>(h) % 6];
  std::snprintf(out, sizeof out, "#%02x%02x%02x", static_cast<int>(40 + 180 * v[0]), static_cast<int>(40 + 180 * v[1]),
                static_cast<int>(40 + 180 * v[2]));
  return out;
}

std::string embedding_svg(const std::vector<EmbeddingPoint>& points, const std::vector<std::string>& colour_names,
                          bool has_labels) {
  double x_low = std::numeric_limits<double>::infinity(), x_high = -x_low, y_low = x_low, y_high = -x_low;
  for (const EmbeddingPoint& p : points) {
    x_low = std::min(x_low, p.x), x_high = std::max(x_high, p.x);
    y_low = std::min(y_low, p.y), y_high = std::max(y_high, p.y);
  }
  const double margin = 10, span = kPlot - 2 * margin;
  auto px = [&](double v) { return kLeft + margin + (v - x_low) / std::max(x_high - x_low, 1e-12) * span; };
  auto py = [&](double v) { return kTop + margin + (v - y_low) / std::max(y_high - y_low, 1e-12) * span; };
  const double width = kLeft + kPlot + 20 + kLegendWidth, height = kTop + kPlot + 40;
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(width) + "\" height=\"" +
                    svg_number(height) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += text(10, 18, "The evaluated images' features, mapped to 2-D by t-SNE",
              " font-size=\"13\" font-weight=\"bold\"");
  svg += "<rect x=\"" + svg_number(kLeft) + "\" y=\"" + svg_number(kTop) + "\" width=\"" + svg_number(kPlot) +
         "\" height=\"" + svg_number(kPlot) + "\" fill=\"none\" stroke=\"#999\"/>\n";
  svg += text(kLeft + kPlot / 2, kTop + kPlot + 18, "t-SNE dimension 1 (no unit: nearby images have similar features)",
              " text-anchor=\"middle\"");
  svg += "<text transform=\"translate(" + svg_number(kLeft - 12) + "," + svg_number(kTop + kPlot / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">t-SNE dimension 2</text>\n";
  for (const EmbeddingPoint& p : points) {
    const double x = px(p.x), y = py(p.y);
    if (p.mismatched) svg += ring(x, y);
    svg += mark(x, y, p.known_class, cluster_colour(p.colour),
                p.tooltip.empty() ? "" : "<title>" + markup_escape(p.tooltip) + "</title>");
  }

  // The legend: the colours (clusters, by their matched class), then the marks.
  const double lx = kLeft + kPlot + 20;
  double ly = kTop + 8;
  svg += text(lx, ly, has_labels ? "Colour: predicted cluster, named by" : "Colour: predicted cluster",
              " font-weight=\"bold\"");
  if (has_labels) svg += text(lx, ly += 14, "its matched class", " font-weight=\"bold\"");
  ly += 8;
  std::vector<bool> used(colour_names.size(), false);
  for (const EmbeddingPoint& p : points)
    if (p.colour >= 0 && p.colour < static_cast<int64_t>(used.size())) used[static_cast<size_t>(p.colour)] = true;
  size_t shown = 0, unshown = 0;
  for (size_t c = 0; c < colour_names.size(); ++c) {
    if (!used[c]) continue;
    if (shown == kLegendEntries) {
      ++unshown;
      continue;
    }
    ly += 14;
    svg += mark(lx + 5, ly - 4, false, cluster_colour(static_cast<int64_t>(c)));
    svg += text(lx + 14, ly, colour_names[c]);
    ++shown;
  }
  if (unshown > 0) svg += text(lx, ly += 14, "... and " + std::to_string(unshown) + " more clusters");
  ly += 24;
  svg += text(lx, ly, "Marks", " font-weight=\"bold\"");
  // A legend line: its mark (a ring around a disc for a mismatch), then its words.
  auto entry = [&](const std::string& kind, const std::string& words) {
    ly += kind == "ring" ? 18 : 16;
    if (kind == "ring") svg += ring(lx + 5, ly - 4);
    svg += mark(lx + 5, ly - 4, kind == "square", "#888") + text(lx + 14, ly, words);
  };
  if (!has_labels) {
    entry("disc", "an image (its class unknown)");
  } else {
    entry("square", "image of a known (old) class");
    entry("disc", "image of a new class (or unlabelled)");
    entry("ring", "its cluster is not its class's");
  }
  return svg + "</svg>\n";
}

}  // namespace mcdl::tools
