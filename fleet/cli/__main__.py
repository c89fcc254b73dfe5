from fleet.cli._main import main

raise SystemExit(main())
