// Line charts as standalone SVG for mcdl_report: panels stacked vertically, each with its own
// y range and y axis title, a shared x axis (epochs, 1-based), gridlines with tick labels, one
// coloured polyline per series and a legend. Missing values (NaN) break a line. No dependency: plain text.
#pragma once
#include <string>
#include <vector>

namespace mcdl::tools {

struct Series {
  std::string name;
  std::vector<double> y;  // one value per x; NaN where missing
};

struct Panel {
  std::string title;
  std::vector<Series> series;
  std::string y_label;  // the y axis's title ("accuracy (%)"), written up its left side
};

// The x values (epochs) are shared by every panel's series.
std::string line_charts_svg(const std::vector<double>& x, const std::vector<Panel>& panels);

// `text` with &, <, > and " as entities, for SVG and HTML text and attribute values.
std::string markup_escape(const std::string& text);
// A coordinate or length for an SVG attribute ("%.4g").
std::string svg_number(double v);

}  // namespace mcdl::tools
