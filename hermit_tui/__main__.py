from hermit_tui.cli import main

raise SystemExit(main())
