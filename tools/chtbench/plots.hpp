// PNG figures through gnuplot (pngcairo). A Figure is one PNG of one or more panels; each
// panel draws its series as lines over numeric x, or as clustered bars over categories. The
// legend sits right of the plot; a multi-panel figure shows one legend, the first panel's, in a
// column reserved at the right of the canvas (its panels are expected to share their series). The
// generated .gp script (data inline) is kept next to the PNG so a figure can be re-rendered
// or restyled by hand.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace chtbench {

struct Series {
  std::string title{};
  std::vector<double> x{};  // lines: x values; bars: unused (one value per category)
  std::vector<double> y{};
  int style = -1;  // colour and marker index, so one structure looks the same in every figure;
                   // -1: by position in the panel
};

struct Panel {
  std::string title{}, xlabel{}, ylabel{};
  bool logx = false, logy = false;
  int logx_base = 2;
  std::vector<std::string> categories{};  // non-empty: clustered bars, one cluster per category
  std::vector<std::pair<double, std::string>> xtics{};  // lines: named x positions (else auto)
  std::vector<Series> series{};
  std::vector<std::string> functions{};  // extra gnuplot plot items, e.g. "2**(-x) title 'bound'"
};

struct Figure {
  std::string name{};  // file stem: NAME.png and NAME.gp
  std::string title{};
  int rows = 1, cols = 1;
  int width = 1100, height = 650;
  // Panels with different series: each its own key, below it, in the bottom 40% of the canvas
  // (one row of panels).
  bool legend_per_panel = false;
  std::vector<Panel> panels{};
};

// Writes DIR/NAME.gp and runs gnuplot on it to make DIR/NAME.png. Returns false (and writes
// only the script) when gnuplot is missing or fails.
bool render(const Figure& figure, const std::filesystem::path& dir);

}  // namespace chtbench
