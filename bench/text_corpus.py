"""A realistic mixed corpus for ``python -m bench text``: voice-assistant
answers as an LLM writes them, English and Chinese, most sentences plain,
some with prices, counts, times, dates, percentages, units and lists."""

from __future__ import annotations

ANSWERS = [
    "Sure! Here's a quick overview of the plan. First, we'll review the budget. "
    "The total comes to $1,299.99, which is about 15% over last year's figure. "
    "If that sounds too high, we can trim a few items. Let me know what you think.",

    "The flight leaves at 10:30 am on May 5, 2024 from Terminal 2. "
    "Please arrive at least two hours early. Boarding closes 20 minutes before departure. "
    "Your seat is 14C, by the window. Have a great trip!",

    "To make the pancakes, you'll need 2 cups of flour, 1 1/2 cups of milk and 2 eggs. "
    "Mix everything until smooth. Heat a pan to medium and add a little butter. "
    "Pour about 1/4 cup of batter for each pancake. Cook until bubbles form, then flip. "
    "Serve warm with syrup or fresh fruit.",

    "Dr. Smith's office is on Main St., just past the library. "
    "It's open Monday through Friday, from 9 am to 5 pm. "
    "You can call them at 555-123-4567 to book an appointment. "
    "They usually have openings within a week.",

    "The weather today will be mostly sunny, with a high of 25°C and a low of 14°C. "
    "Winds will be light, around 10 km/h. There is a small chance of rain in the evening. "
    "Tomorrow looks cooler and cloudier.",

    "Great question. Photosynthesis is how plants turn light into chemical energy. "
    "They take in carbon dioxide and water, and give off oxygen. "
    "The process happens mostly in the leaves. Without it, life on Earth as we know it "
    "would not exist.",

    "The company reported revenue of $2.5 million in the 3rd quarter, up from $1.8 million. "
    "Operating costs rose by 8.5%. The board expects growth to continue into 2025. "
    "Shares closed at $42.17 on Friday.",

    "I'm sorry, I can't help with that request. Is there something else you would like "
    "to talk about? I'm happy to help with questions about travel, cooking or technology.",

    "好的，我来帮你安排一下。首先，我们需要确认出发时间。"
    "航班是2024年5月6日下午2:30起飞，请提前两个小时到达机场。"
    "登机口在T2航站楼。祝你旅途愉快！",

    "这款手机的售价是3,999元，比上一代便宜了10%。"
    "它配备了6.7英寸的屏幕和5000毫安时的电池。"
    "充电30分钟可以充到80%。总体来说性价比很高。",

    "今天北京的天气晴朗，最高气温25℃，最低气温12℃。"
    "空气质量良好，适合户外活动。明天可能会有小雨，记得带伞。",

    "如果遇到紧急情况，请立即拨打110报警，火警请拨119，急救请拨120。"
    "购买火车票可以拨打12306或者使用官方应用。"
    "我的联系电话是13501234567，有问题随时找我。",

    "学习一门新语言需要耐心和坚持。每天花一点时间练习听力和口语。"
    "多和母语者交流，不要害怕犯错。慢慢地，你会发现自己进步了很多。",

    "根据最新数据，今年上半年的销售额增长了6.3%，达到2.5亿元。"
    "其中线上渠道占比超过60%。预计全年增长率在8%到10%之间。",

    "Here are the steps.\n1. Open the app.\n2. Tap settings.\n3. Choose your language.\n"
    "That's it, you're all set.",

    "The recipe serves 4 people and takes about 45 minutes. Preheat the oven to 200°C. "
    "Roast the vegetables for 30 min, turning them halfway through.",

    "Our meeting is scheduled for 2024-03-15 at 14:00. The agenda covers three topics: "
    "the new hire plan, the office move and the Q3 budget. Please bring your notes.",

    "Your order xk7731 ships to 1315 W Grand Ave, Sunnyvale, CA 94085. "
    "The card ending in 4411 was charged $9/mo. "
    "Questions are welcome any time. Call +44 20 7946 0958 or visit https://example.com/help. "
    "We reply within a day.",

    "会议定在10:30 a.m. 开始，地点在新ｉＰｈｏｎｅ发布厅。请大家准时到场。",

    "Mount Everest is 8,849 m tall, making it the highest mountain above sea level. "
    "The first confirmed ascent was in 1953. Today, hundreds of climbers attempt it each year.",
]
